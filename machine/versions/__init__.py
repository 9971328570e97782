"""Versions and the promotion gate: candidates measured against the live version on held-out cases
(``propose``), made live only when they pass (``commit``), and undone (``revert``)."""

from ._gate import SideTally, gate, measured
from ._lifecycle import VersionList, commit, current, live_history, revert, texts_of, update, versions
from ._propose import Candidate, propose
from ._report import format_report

__all__ = [
    "Candidate",
    "SideTally",
    "VersionList",
    "commit",
    "current",
    "format_report",
    "gate",
    "live_history",
    "measured",
    "propose",
    "revert",
    "texts_of",
    "update",
    "versions",
]
