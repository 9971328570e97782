"""Measuring machines on their cases: suites (one machine, or a whole family), paired comparisons between
versions, agreement between graders, and the statistics and tallies they rest on.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from . import stats
    from ._agree import BASE_PASS_RATES, REFERENCE_PASS, THRESHOLDS, agree
    from ._agreement_report import AgreementReport, AtThreshold, Disagreement, Pair
    from ._compare import Comparison, Plan, changes_between, compare
    from ._disagreements import Disagreements, disagreeing
    from ._family import FamilyReport, Skipped, run_family
    from ._options import MeasureOptions, Options
    from ._pool import BatchWriter, run_pool
    from ._side import Side
    from ._suite import SuiteReport, SuiteSummary, find_suite, is_result, run_suite, suite_key
    from ._tally import CaseResult, CriterionResult, tally_criteria

_HOMES = {
    "stats": ".stats",
    "BASE_PASS_RATES": "._agree",
    "REFERENCE_PASS": "._agree",
    "THRESHOLDS": "._agree",
    "agree": "._agree",
    "AgreementReport": "._agreement_report",
    "AtThreshold": "._agreement_report",
    "Disagreement": "._agreement_report",
    "Pair": "._agreement_report",
    "Disagreements": "._disagreements",
    "disagreeing": "._disagreements",
    "Comparison": "._compare",
    "Plan": "._compare",
    "changes_between": "._compare",
    "compare": "._compare",
    "FamilyReport": "._family",
    "Skipped": "._family",
    "run_family": "._family",
    "MeasureOptions": "._options",
    "Options": "._options",
    "BatchWriter": "._pool",
    "run_pool": "._pool",
    "Side": "._side",
    "SuiteReport": "._suite",
    "SuiteSummary": "._suite",
    "find_suite": "._suite",
    "is_result": "._suite",
    "run_suite": "._suite",
    "suite_key": "._suite",
    "CaseResult": "._tally",
    "CriterionResult": "._tally",
    "tally_criteria": "._tally",
}
"""The module each public name is defined in."""

__all__ = [
    "BASE_PASS_RATES",
    "REFERENCE_PASS",
    "THRESHOLDS",
    "AgreementReport",
    "AtThreshold",
    "BatchWriter",
    "CaseResult",
    "Comparison",
    "CriterionResult",
    "Disagreement",
    "Disagreements",
    "FamilyReport",
    "MeasureOptions",
    "Options",
    "Pair",
    "Plan",
    "Side",
    "Skipped",
    "SuiteReport",
    "SuiteSummary",
    "agree",
    "changes_between",
    "compare",
    "disagreeing",
    "find_suite",
    "is_result",
    "run_family",
    "run_pool",
    "run_suite",
    "stats",
    "suite_key",
    "tally_criteria",
]

__getattr__, __dir__ = resolver(__name__, _HOMES, {"stats"})
