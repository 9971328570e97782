"""Tallies: a case's scored trials and a criterion's grades, counted as runs finish. UNSCORED grades and
failed runs are counted apart and never enter a mean."""

from __future__ import annotations

from pydantic import Field, computed_field

from machine.runs import Model, Run, passes


class CaseResult(Model):
    """One case's trials: the scores of those scored, how many passed, and what was left out."""

    id: str
    trials: int = 0
    scores: list[float] = Field(default_factory=list)
    passes: int = 0
    # Counted for the report's summary; a case's dump keeps its stable shape (id, trials, mean, passes,
    # scores).
    unscored: int = Field(default=0, exclude=True)
    """Runs with no scored criterion at all: left out of the mean."""
    unscored_grades: int = Field(default=0, exclude=True)
    """Criterion grades that came back UNSCORED (each left out of its run's score)."""
    errors: int = Field(default=0, exclude=True)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean(self) -> float | None:
        """The mean of the scored trials; None when none was scored."""
        return sum(self.scores) / len(self.scores) if self.scores else None

    def add(self, run: Run) -> None:
        """Count one finished run of this case."""
        self.trials += 1
        if run.status == "error":
            self.errors += 1
            return
        self.unscored_grades += len(run.scorecard.unscored) if run.scorecard else 0
        score = run.score
        if score is None:
            self.unscored += 1
            return
        self.scores.append(score)
        self.passes += bool(run.passed)


class CriterionResult(Model):
    """One criterion over graded runs: its mean where scored; UNSCORED grades counted apart."""

    total: float = Field(default=0.0, exclude=True)
    """The sum of its scored grades (the dump shows the mean)."""
    runs: int = 0
    """Runs where the criterion was scored."""
    passes: int = Field(default=0, exclude=True)
    """Scored runs where the criterion reached the pass score (the dump shows the pass rate)."""
    unscored: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean(self) -> float | None:
        """The mean of its scored grades; None when none was scored."""
        return self.total / self.runs if self.runs else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """The share of its scored grades that reached the pass score."""
        return self.passes / self.runs if self.runs else None

    def merge(self, other: CriterionResult) -> None:
        """Add another tally of the same criterion (a family member's) to this one."""
        self.total += other.total
        self.runs += other.runs
        self.passes += other.passes
        self.unscored += other.unscored


def tally_criteria(criteria: dict[str, CriterionResult], run: Run) -> None:
    """Add a graded run's criterion grades to ``criteria`` (name -> tally)."""
    if run.status == "error" or run.scorecard is None:
        return
    card = run.scorecard
    for name, grade in card.criteria.items():
        figures = criteria.setdefault(name, CriterionResult())
        if grade.score is None:
            figures.unscored += 1
            continue
        figures.total += grade.score
        figures.runs += 1
        figures.passes += passes(grade.score, card.pass_score)
