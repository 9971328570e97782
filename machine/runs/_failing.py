"""What fails among a machine's newest runs, grade by grade, for a person to see the ways it fails before
the runs that show them (``_failure_groups`` groups them by reason). The database reads them along the
newest-first index of the machine (``_statements``' ``failing``), a few JSON fields of each run and never
a run whole, over the same window as ``health``: so the answer costs the same at a hundred runs and at a
million, and holds at most the window's runs times their criteria.

A grade fails when it is scored below its run's pass score (as ``health`` counts a criterion's fails);
a failed run (status ``error``) is one failing entry under ``RUN_FAILED``, its error as the reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from machine._data import Model

from ._health import HEALTH_WINDOW
from ._statements import Statements
from ._views import Query

RUN_FAILED = "(run failed)"
"""The criterion a failed run's entry is listed under: it failed before any grader could score it."""
REASON_CHARS = 300
"""The most characters of a reason or an error an entry keeps: enough to tell one way of failing from
another, and a page of them stays small."""


class FailingGrade(Model):
    """One criterion scored below its run's pass score, or one failed run (its ``criterion``:
    ``RUN_FAILED``)."""

    run_id: str
    created_at: datetime
    criterion: str
    score: float | None
    """The grade; None for a failed run (which counts 0 wherever a score is summed)."""
    grader: str | None
    reason: str
    """The grader's reason (the run's error for a failed run), cut to ``REASON_CHARS``; empty when none."""


def shortened(text: str | None, limit: int = REASON_CHARS) -> str:
    """``text`` within ``limit`` characters, an ellipsis marking a cut."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _moment(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def failing(query: Query, sql: Statements, machine: str, window: int = HEALTH_WINDOW) -> list[FailingGrade]:
    """Every failing grade and failed run among ``machine``'s newest ``window`` runs, newest first (a
    run's grades by criterion): two index walks of at most ``window`` rows each."""
    if window < 1:
        raise ValueError(f"window {window!r} is not a number of runs (1 or more)")
    found = [
        FailingGrade(
            run_id=run_id,
            created_at=_moment(at),
            criterion=str(criterion),
            score=float(score),
            grader=grader,
            reason=shortened(reason),
        )
        for run_id, at, criterion, score, grader, reason in query(sql.failing_grades, (machine, window))
    ]
    found += [
        FailingGrade(
            run_id=run_id,
            created_at=_moment(at),
            criterion=RUN_FAILED,
            score=None,
            grader=None,
            reason=shortened(error),
        )
        for run_id, at, error in query(sql.failed_runs, (machine, window))
    ]
    found.sort(key=lambda g: g.criterion)
    found.sort(key=lambda g: (g.created_at, g.run_id), reverse=True)
    return found


__all__ = ["REASON_CHARS", "RUN_FAILED", "FailingGrade", "failing", "shortened"]
