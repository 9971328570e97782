"""The promotion gate: a candidate must beat the live version on the held-out cases by at least ``min_z``
standard errors of the per-case difference. With a standard error of 0 (every case moved alike) it passes
only when the difference is positive over at least two cases; a comparison the budget cut short never
passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from machine.measure import stats as _stats
from machine.runs import Run, passes
from machine.spec import Case, CriterionFigures, GateReport, Machine, SideFigures, Version


@dataclass
class SideTally:
    """One version's runs on the held-out cases, as the gate counts them."""

    figures: SideFigures
    machine_model: str
    scores: dict[str, list[float]]
    criteria: dict[str, list[float]]
    criteria_passes: dict[str, int]
    criteria_unscored: dict[str, int]
    scored: int = 0
    passes: int = 0

    def add(self, run: Run, *, how: Literal["reused", "regraded", "new"], pass_score: float) -> None:
        f = self.figures
        f.runs += 1
        setattr(f, how, getattr(f, how) + 1)
        if run.status == "error":
            f.errors += 1
            return
        card = run.scorecard
        score = run.score
        if card is None or score is None:
            f.unscored += 1
            return
        self.scores.setdefault(run.case_id or "", []).append(score)
        self.scored += 1
        self.passes += passes(score, pass_score)
        for criterion, grade in card.criteria.items():
            if grade.score is None:
                self.criteria_unscored[criterion] = self.criteria_unscored.get(criterion, 0) + 1
                continue
            self.criteria.setdefault(criterion, []).append(grade.score)
            if passes(grade.score, pass_score):
                self.criteria_passes[criterion] = self.criteria_passes.get(criterion, 0) + 1

    def finish(self) -> None:
        values = [s for scores in self.scores.values() for s in scores]
        self.figures.mean = _stats.mean(values) if values else None
        self.figures.pass_rate = self.passes / self.scored if self.scored else None


def tally_for(version: Version) -> SideTally:
    """An empty tally of ``version``."""
    return SideTally(SideFigures(version=version.label, model=version.model), version.model, {}, {}, {}, {})


def gate(paired: _stats.Paired | None, min_z: float, stopped: str | None) -> tuple[bool, str]:
    """The promotion gate's decision and the reason in words."""
    if stopped:
        return False, f"the comparison stopped early ({stopped}), so the data is incomplete"
    if paired is None or paired.cases == 0:
        return False, "no held-out case has scored runs of both versions, so there is nothing to compare"
    if paired.diff <= 0:
        return False, (
            f"the candidate's mean is not higher (difference {paired.diff:+.3f} over {paired.cases} cases)"
        )
    if paired.cases < 2:
        return False, "only one held-out case has scored runs of both versions: no standard error to judge by"
    if paired.se == 0:
        return True, (
            f"every one of the {paired.cases} held-out cases scored {paired.diff:+.3f} higher "
            "(standard error 0)"
        )
    z = paired.diff / paired.se
    if z >= min_z:
        return True, (
            f"the candidate scored {paired.diff:+.3f} higher, {z:.2f} standard errors above zero "
            f"(at least {min_z:g} needed)"
        )
    return False, (
        f"the candidate scored {paired.diff:+.3f} higher, only {z:.2f} standard errors above zero "
        f"({min_z:g} needed): not evidence that it is better"
    )


def measured(
    spec: Machine,
    live: Version,
    candidate: Version,
    sides: dict[str, SideTally],
    chosen: Sequence[Case],
    cases_file: str,
    trials: int,
    min_z: float,
    stopped: str | None,
) -> GateReport:
    """The report of a finished comparison: each side's figures, each criterion before and after, the
    paired difference and the gate's decision."""
    before, after = sides[live.label], sides[candidate.label]
    before.finish()
    after.finish()
    paired = None
    if any(before.scores.get(c.id) and after.scores.get(c.id) for c in chosen):
        paired = _stats.paired(before.scores, after.scores)
    passed, decision = gate(paired, min_z, stopped)
    return GateReport(
        machine=spec.name,
        live=live.label,
        candidate=candidate.label,
        cases_file=cases_file,
        cases=len(chosen),
        trials=trials,
        before=before.figures,
        after=after.figures,
        criteria={criterion: _criterion(before, after, criterion) for criterion in spec.rubric},
        diff=None if paired is None else paired.diff,
        se=None if paired is None else paired.se,
        z=None if paired is None else paired.z,
        paired_cases=0 if paired is None else paired.cases,
        min_z=min_z,
        passed=passed,
        decision=decision,
        stopped=stopped,
    )


def _criterion(before: SideTally, after: SideTally, criterion: str) -> CriterionFigures:
    """One criterion's mean and pass rate on each side, with its UNSCORED grades counted apart."""
    figures = CriterionFigures(
        unscored_before=before.criteria_unscored.get(criterion, 0),
        unscored_after=after.criteria_unscored.get(criterion, 0),
    )
    for side, mean_field, rate_field in (
        (before, "before", "before_pass_rate"),
        (after, "after", "after_pass_rate"),
    ):
        values = side.criteria.get(criterion, [])
        if values:
            setattr(figures, mean_field, _stats.mean(values))
            setattr(figures, rate_field, side.criteria_passes.get(criterion, 0) / len(values))
    return figures
