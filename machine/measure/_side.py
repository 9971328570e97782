"""One version's runs in a comparison: tallied per case (its scores) and per criterion of the current
rubric (its grades), with the UNSCORED grades counted apart and why, so a criterion that was never scored
on a side shows as not measured there."""

from __future__ import annotations

from pydantic import Field, computed_field

from machine.runs import Model, Run
from machine.spec import ReasonCount, count_reasons

from ._tally import CaseResult, CriterionResult, tally_criteria


class Side(Model):
    """One version's runs, tallied per case."""

    label: str
    """How the report names it: the ref (``HEAD``) or ``working tree``."""
    revision: str | None
    """What its runs record as their revision."""
    cases: dict[str, CaseResult] = Field(default_factory=dict)
    criteria: dict[str, CriterionResult] = Field(default_factory=dict)
    """Each criterion of the current rubric over this side's graded runs, as a suite counts it."""
    reasons: dict[str, list[str]] = Field(default_factory=dict, exclude=True)
    """Each criterion's UNSCORED reasons, one per grade."""

    def add(self, case_id: str, run: Run) -> None:
        """Count one finished run of case ``case_id``: its score, and each criterion's grade."""
        self.cases[case_id].add(run)
        tally_criteria(self.criteria, run)
        if run.status == "ok" and run.scorecard is not None:
            for name, grade in run.scorecard.criteria.items():
                if grade.score is None:
                    self.reasons.setdefault(name, []).append(grade.reason)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unscored_reasons(self) -> dict[str, list[ReasonCount]]:
        """Each criterion with UNSCORED grades: their commonest reasons, with how many times each came."""
        return {name: count_reasons(reasons) for name, reasons in self.reasons.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unmeasured(self) -> list[str]:
        """Criteria with no scored grade on this side: not measured here."""
        return [name for name, figures in self.criteria.items() if figures.runs == 0]

    @property
    def scores(self) -> dict[str, list[float]]:
        """Each case's scored trials."""
        return {case_id: list(result.scores) for case_id, result in self.cases.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def runs(self) -> int:
        """Runs counted, failed ones included."""
        return sum(c.trials for c in self.cases.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean(self) -> float | None:
        """The mean over every scored run."""
        scores = [s for c in self.cases.values() for s in c.scores]
        return sum(scores) / len(scores) if scores else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float | None:
        """The share of decided runs that passed (``CaseResult.undecided`` are neither)."""
        decided = sum(c.decided for c in self.cases.values())
        return sum(c.passes for c in self.cases.values()) / decided if decided else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def undecided(self) -> int:
        """Scored runs an UNSCORED criterion could still turn from pass to fail or back."""
        return sum(c.undecided for c in self.cases.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unscored(self) -> int:
        """Criterion grades that came back UNSCORED (left out of their runs' scores)."""
        return sum(c.unscored_grades for c in self.cases.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unscored_runs(self) -> int:
        """Runs with no scored criterion at all (left out of the comparison)."""
        return sum(c.unscored for c in self.cases.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def errors(self) -> int:
        """Failed runs."""
        return sum(c.errors for c in self.cases.values())
