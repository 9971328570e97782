"""Measuring machines on their cases: suites (one machine, or a whole family), paired comparisons between
versions, agreement between graders, and the statistics and tallies they rest on."""

from . import stats
from ._agree import BASE_PASS_RATES, REFERENCE_PASS, THRESHOLDS, agree
from ._agreement import AgreementReport, AtThreshold, Disagreement, Pair
from ._compare import Comparison, Plan, changes_between, compare
from ._family import FamilyReport, Skipped, family, run_family
from ._pool import BatchWriter, run_pool
from ._side import Side
from ._suite import SuiteReport, SuiteSummary, find_suite, is_result, run_suite, suite_key
from ._tally import CaseResult, CriterionResult, tally_criteria

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
    "FamilyReport",
    "Pair",
    "Plan",
    "Side",
    "Skipped",
    "SuiteReport",
    "SuiteSummary",
    "agree",
    "changes_between",
    "compare",
    "family",
    "find_suite",
    "is_result",
    "run_family",
    "run_pool",
    "run_suite",
    "stats",
    "suite_key",
    "tally_criteria",
]
