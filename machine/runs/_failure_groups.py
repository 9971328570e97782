"""The ways a machine fails: its failing grades (``_failing``) grouped by criterion and by what the
grader said, so three hundred failing runs read as the three reasons behind them. Reasons that differ
only in their numbers, in what they quote, in case or in spacing (``"expected 3 items, got 5"`` and
``"Expected 4 items, got 7"``) are one way of failing; the newest's words stand for the group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from pydantic import Field

from machine._data import Model

from ._failing import FailingGrade

MAX_GROUPS = 20
"""The most groups an answer lists; the rest are counted (``FailureGroups.left_out``)."""
GROUP_RUNS = 5
"""The newest runs of a group listed by id."""
KEY_CHARS = 160
"""The characters of a normalised reason that decide its group."""
NO_REASON = "(no reason given)"

_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|`[^`\n]*`|(?<!\w)'[^'\n]*'(?!\w)")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_SPACE = re.compile(r"\s+")


def normalised(reason: str) -> str:
    """``reason`` as its group's key: lowercase, a quoted span as ``"…"``, a run of digits (a number
    with its decimals) as ``#``, spaces collapsed, cut to ``KEY_CHARS``; empty as ``NO_REASON``."""
    text = _QUOTED.sub('"…"', reason.lower())
    text = _SPACE.sub(" ", _DIGITS.sub("#", text)).strip()
    return text[:KEY_CHARS] or NO_REASON


class FailureGroup(Model):
    """One way a machine fails: a criterion and a reason, and the runs that fail it so."""

    criterion: str
    reason: str
    """The newest grade's reason, as the grader wrote it (cut); ``NO_REASON`` when it gave none."""
    key: str
    """The normalised reason the group gathers (``normalised``)."""
    count: int
    """The failing grades in the group: one a run."""
    mean: float | None
    """Their mean score; None for failed runs, which have none."""
    newest: datetime
    run_ids: list[str] = Field(default_factory=list)
    """The newest ``GROUP_RUNS`` runs of the group, newest first."""


class FailureGroups(Model):
    """The groups, the largest first (ties: the most recent first), and what was left out."""

    groups: list[FailureGroup] = Field(default_factory=list)
    failing: int
    """Every failing grade grouped, in the groups listed or not."""
    left_out: int
    """The failing grades in the groups not listed."""
    left_out_groups: int


def group_failures(grades: Iterable[FailingGrade], most: int = MAX_GROUPS) -> FailureGroups:
    """``grades`` (newest first, as the store gives them) grouped by criterion and normalised reason;
    the ``most`` largest listed."""
    gathered: dict[tuple[str, str], list[FailingGrade]] = {}
    for grade in grades:
        gathered.setdefault((grade.criterion, normalised(grade.reason)), []).append(grade)
    groups = [_group(criterion, key, members) for (criterion, key), members in gathered.items()]
    groups.sort(key=lambda g: (g.criterion, g.key))
    groups.sort(key=lambda g: (-g.count, -g.newest.timestamp()))
    kept, rest = groups[:most], groups[most:]
    return FailureGroups(
        groups=kept,
        failing=sum(g.count for g in groups),
        left_out=sum(g.count for g in rest),
        left_out_groups=len(rest),
    )


def _group(criterion: str, key: str, members: list[FailingGrade]) -> FailureGroup:
    members = sorted(members, key=lambda g: (g.created_at, g.run_id), reverse=True)
    scores = [g.score for g in members if g.score is not None]
    return FailureGroup(
        criterion=criterion,
        reason=members[0].reason or NO_REASON,
        key=key,
        count=len(members),
        mean=sum(scores) / len(scores) if scores else None,
        newest=members[0].created_at,
        run_ids=[g.run_id for g in members[:GROUP_RUNS]],
    )


__all__ = [
    "GROUP_RUNS",
    "MAX_GROUPS",
    "NO_REASON",
    "FailureGroup",
    "FailureGroups",
    "group_failures",
    "normalised",
]
