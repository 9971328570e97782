"""Versions and the promotion gate: candidates measured against the live version on held-out cases
(``propose``), made live only when they pass (``commit``), and undone (``revert``)."""

from ._gate import SideTally, empty_tally, gate, measured
from ._lifecycle import VersionList, commit, current, live_history, revert, texts_of, update, versions
from ._propose import Candidate, Job, plan_runs, propose
from ._report import format_report
from ._written import write_candidate

__all__ = [
    "Candidate",
    "Job",
    "SideTally",
    "VersionList",
    "commit",
    "current",
    "empty_tally",
    "format_report",
    "gate",
    "live_history",
    "measured",
    "plan_runs",
    "propose",
    "revert",
    "texts_of",
    "update",
    "versions",
    "write_candidate",
]
