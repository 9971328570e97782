"""Versions and the promotion gate: candidates measured against the live version on held-out cases
(``propose``), made live only when they pass (``commit``), and undone (``revert``).

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._commit import CommitPlan, commit, plan_commit
    from ._fix_gate import fix_gate
    from ._gate import SideTally, empty_tally, evidence_floor, gate, measured
    from ._lifecycle import (
        RevertPlan,
        VersionList,
        current,
        live_history,
        plan_revert,
        revert,
        texts_of,
        update,
        versions,
    )
    from ._propose import PROPOSE_TRIALS, Candidate, Job, check_fixed, plan_runs, propose
    from ._report import format_report, sparkline, thinned
    from ._too_few_cases import thin_gate
    from ._write_candidate import write_candidate

_HOMES = {
    "fix_gate": "._fix_gate",
    "SideTally": "._gate",
    "empty_tally": "._gate",
    "evidence_floor": "._gate",
    "gate": "._gate",
    "measured": "._gate",
    "VersionList": "._lifecycle",
    "CommitPlan": "._commit",
    "commit": "._commit",
    "plan_commit": "._commit",
    "RevertPlan": "._lifecycle",
    "plan_revert": "._lifecycle",
    "current": "._lifecycle",
    "live_history": "._lifecycle",
    "revert": "._lifecycle",
    "texts_of": "._lifecycle",
    "update": "._lifecycle",
    "versions": "._lifecycle",
    "PROPOSE_TRIALS": "._propose",
    "Candidate": "._propose",
    "Job": "._propose",
    "check_fixed": "._propose",
    "plan_runs": "._propose",
    "propose": "._propose",
    "format_report": "._report",
    "sparkline": "._report",
    "thinned": "._report",
    "thin_gate": "._too_few_cases",
    "write_candidate": "._write_candidate",
}
"""The module each public name is defined in."""

__all__ = [
    "PROPOSE_TRIALS",
    "Candidate",
    "CommitPlan",
    "Job",
    "RevertPlan",
    "SideTally",
    "VersionList",
    "check_fixed",
    "commit",
    "current",
    "empty_tally",
    "evidence_floor",
    "fix_gate",
    "format_report",
    "gate",
    "live_history",
    "measured",
    "plan_commit",
    "plan_revert",
    "plan_runs",
    "propose",
    "revert",
    "sparkline",
    "texts_of",
    "thin_gate",
    "thinned",
    "update",
    "versions",
    "write_candidate",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
