"""How a machine is doing, at a glance: its newest runs' mean score, pass rate, the share left unscored,
spend, a short trend and the criterion failing most, so a viewer sees which machine needs attention
before opening any. The database sums them along the newest-first index of the machine (``_statements``'
``health``), over a fixed window of its newest runs, so the answer costs the same at a hundred runs and at
a million, and no run is read whole.

What counts, in the window (the newest ``HEALTH_WINDOW`` runs, whatever their state; the samples an
RL training made of its policy, ``Run.sampled_for``, are not the machine's own runs and are left out):

- a failed run (status ``error``) counts 0 in the mean and as a fail, as the gate counts it;
- an *unscored* run is one that finished with no score: never graded, or graded with nothing scored. It
  is left out of the mean and the pass rate and counted apart (``unscored_share``: of every run in the
  window);
- the pass rate is the share of decided runs that passed (a run an UNSCORED criterion could still turn is
  neither, as ``Scorecard.passed`` says);
- a criterion fails a run when it is scored below the run's pass score.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import Field, computed_field

from machine._data import Model

from ._statements import Statements
from ._views import Query

HEALTH_WINDOW = 200
"""The newest runs of a machine its figures are taken over."""
HEALTH_SLICES = 8
"""How many windows back the trend reaches: the mean of each, oldest first, the last this window's."""


class CriterionHealth(Model):
    """One criterion over the graded runs of the window."""

    criterion: str
    scored: int
    """Runs where it was scored."""
    unscored: int
    """Runs where it came back UNSCORED."""
    mean: float | None
    fails: int
    """Runs where it was scored below the run's pass score."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """The share of the runs where it was scored that it did not fail; None when it never was."""
        return (self.scored - self.fails) / self.scored if self.scored else None


class MachineHealth(Model):
    """A machine's figures over its newest ``window`` runs."""

    machine: str
    window: int
    """The most runs the figures are taken over (``HEALTH_WINDOW``)."""
    runs: int
    """The runs in the window: ``window``, or all the machine has when it has fewer."""
    scored: int
    """Finished runs with a score."""
    unscored: int
    """Finished runs with no score: ``ungraded`` ones and those graded with nothing scored."""
    ungraded: int
    errors: int
    """Failed runs: each a 0 in the mean and a fail."""
    passes: int
    fails: int
    """Decided fails, failed runs included."""
    mean: float | None
    """The mean score of the scored and failed runs; None when there are none."""
    spent_usd: float
    """What the window's runs cost."""
    newest: datetime | None
    trend: list[float | None] = Field(default_factory=list)
    """The mean of each of the newest ``HEALTH_SLICES`` windows that hold runs, oldest first."""
    criteria: list[CriterionHealth] = Field(default_factory=list)
    """Each criterion graded in the window, the most failing first (then the lowest mean)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """The share of decided runs that passed; None when no run was decided."""
        decided = self.passes + self.fails
        return self.passes / decided if decided else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unscored_share(self) -> float | None:
        """The share of the window's runs that finished with no score; None when it holds no run."""
        return self.unscored / self.runs if self.runs else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def worst(self) -> CriterionHealth | None:
        """The criterion failing most, when one fails at all."""
        return self.criteria[0] if self.criteria and self.criteria[0].fails else None


def _worst_first(row: CriterionHealth) -> tuple[int, float, str]:
    return (-row.fails, 2.0 if row.mean is None else row.mean, row.criterion)


def health(query: Query, sql: Statements, machine: str, window: int = HEALTH_WINDOW) -> MachineHealth:
    """``machine``'s figures over its newest ``window`` runs: three statements, each an index walk that
    reads at most ``window`` rows (the trend ``HEALTH_SLICES`` times as many, score and status alone)."""
    if window < 1:
        raise ValueError(f"window {window!r} is not a number of runs (1 or more)")
    [(runs, errors, scored, ungraded, mean, passes, fails, spent, newest)] = query(
        sql.health, (machine, window)
    )
    criteria = [
        CriterionHealth(
            criterion=name, scored=int(n), unscored=int(grades) - int(n), mean=_float(avg), fails=int(below)
        )
        for name, n, grades, avg, below in query(sql.health_criteria, (machine, window))
    ]
    slices = query(sql.health_trend, (window, machine, window * HEALTH_SLICES))
    return MachineHealth(
        machine=machine,
        window=window,
        runs=int(runs),
        scored=int(scored),
        unscored=int(runs) - int(errors) - int(scored),
        ungraded=int(ungraded),
        errors=int(errors),
        passes=int(passes),
        fails=int(fails) + int(errors),
        mean=_float(mean),
        spent_usd=float(spent or 0.0),
        newest=None if newest is None else datetime.fromisoformat(newest),
        trend=_trend(slices),
        criteria=sorted(criteria, key=_worst_first),
    )


def _trend(slices: Sequence[Any]) -> list[float | None]:
    """Rows of (slice, mean), slice 0 the newest, as means oldest first."""
    return [_float(mean) for _, mean in sorted(slices, key=lambda row: -int(row[0]))]


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


__all__ = ["HEALTH_SLICES", "HEALTH_WINDOW", "CriterionHealth", "MachineHealth", "health"]
