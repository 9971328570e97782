"""Tallies: a case's scored trials and a criterion's grades, counted as runs finish. UNSCORED grades and
failed runs are counted apart and never enter a mean; a run an UNSCORED criterion could still turn
(``Scorecard.passed`` is None) is counted as undecided, neither a pass nor a fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from machine.runs import Run, passes

Counted = Annotated[int, Field(exclude=True)]
"""A count the report's summary adds up, left out of a case's dump (which keeps its stable shape)."""


@dataclass(slots=True)  # a plain class: a suite holds one per case, and counts into it on every run
class CaseResult:
    """One case's trials: the scores of those scored, how many passed, how many could not be decided,
    and what was left out."""

    case_id: str
    """The case's id, as every run and report names it (``case_id``)."""
    trials: int = 0
    scores: list[float] = field(default_factory=list)
    passes: int = 0
    undecided: int = 0
    """Scored runs an UNSCORED criterion could still turn: neither passes nor fails."""
    mean: float | None = None
    """The mean of the scored trials; None when none was scored."""
    unscored: Counted = 0
    """Runs with no scored criterion at all: left out of the mean."""
    unscored_grades: Counted = 0
    """Criterion grades that came back UNSCORED (each left out of its run's score)."""
    errors: Counted = 0
    runs: list[str] = field(default_factory=list)
    """The ids of its runs, in the order they finished (``machine show-run ID`` shows one)."""
    total: Annotated[float, Field(exclude=True)] = 0.0

    def add(self, run: Run) -> None:
        """Count one finished run of this case."""
        self.trials += 1
        self.runs.append(run.id)
        if run.status == "error":
            self.errors += 1
            return
        card = run.scorecard
        self.unscored_grades += len(card.unscored) if card else 0
        score = None if card is None else card.score
        if card is None or score is None:
            self.unscored += 1
            return
        self.scores.append(score)
        self.total += score
        self.mean = self.total / len(self.scores)
        passed = card.passed
        self.passes += passed is True
        self.undecided += passed is None

    @property
    def decided(self) -> int:
        """Scored runs that passed or failed: what a pass rate is a share of."""
        return len(self.scores) - self.undecided


@dataclass(slots=True)  # a plain class: counted into on every graded run
class CriterionResult:
    """One criterion over graded runs: its mean and pass rate where scored; UNSCORED grades counted apart."""

    runs: int = 0
    """Runs where the criterion was scored."""
    unscored: int = 0
    mean: float | None = None
    """The mean of its scored grades; None when none was scored."""
    pass_rate: float | None = None
    """The share of its scored grades that reached the pass score."""
    total: Annotated[float, Field(exclude=True)] = 0.0
    passes: Counted = 0
    raised: dict[str, int] = field(default_factory=dict)
    """Its check's exceptions (``KeyError at machines/dates/rubric.py:14``), each with how many runs it
    left UNSCORED: a bug in the person's check, named where it is."""

    def add(self, score: float, passed: bool) -> None:
        """Count one scored grade."""
        self.total += score
        self.runs += 1
        self.passes += passed
        self._figures()

    def merge(self, other: CriterionResult) -> None:
        """Add another tally of the same criterion (a family member's) to this one."""
        self.total += other.total
        self.runs += other.runs
        self.passes += other.passes
        self.unscored += other.unscored
        for where, count in other.raised.items():
            self.raised[where] = self.raised.get(where, 0) + count
        self._figures()

    def _figures(self) -> None:
        self.mean = self.total / self.runs if self.runs else None
        self.pass_rate = self.passes / self.runs if self.runs else None


def tally_criteria(criteria: dict[str, CriterionResult], run: Run) -> None:
    """Add a graded run's criterion grades to ``criteria`` (name -> tally)."""
    if run.status == "error" or run.scorecard is None:
        return
    card = run.scorecard
    for name, grade in card.criteria.items():
        figures = criteria.setdefault(name, CriterionResult())
        if grade.score is None:
            figures.unscored += 1
            if "raised" in grade.details:  # a check's exception (``grade.raised``)
                where = f"{grade.details['raised']} at {grade.details.get('at')}"
                figures.raised[where] = figures.raised.get(where, 0) + 1
        else:
            figures.add(grade.score, passes(grade.score, card.pass_score))
