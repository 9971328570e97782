"""The promotion gate: a candidate must beat the live version on the held-out cases by at least ``min_z``
standard errors of the per-case difference. With a standard error of 0 (every case moved alike) it passes
only when the difference is positive over at least two cases; a comparison the budget cut short never
passes. A criterion with no scored grade on either side was not measured, and the decision is then "not
measured": a run's score leaves its UNSCORED criteria out, so without this a candidate whose heaviest
criterion could not be graded would be judged on the light ones alone. A criterion scored on some runs
only is measured: its figures use the grades that were scored, and its UNSCORED ones are counted apart
with their reasons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from machine.measure import stats as _stats
from machine.runs import Run, passes
from machine.spec import (
    Case,
    CriterionFigures,
    GateOutcome,
    GateReport,
    Machine,
    SideFigures,
    Version,
    count_reasons,
)

Z_TOLERANCE = 1e-9
"""A gain of exactly ``min_z`` standard errors reaches the gate, though its z came out a rounding error
short."""


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
    criteria_reasons: dict[str, list[str]] = field(default_factory=dict)
    """Each criterion's UNSCORED reasons, one per grade."""

    def add(self, run: Run, *, how: Literal["reused", "regraded", "new"], pass_score: float) -> None:
        f = self.figures
        f.runs += 1
        setattr(f, how, getattr(f, how) + 1)
        if run.status == "error":
            f.errors += 1
            return
        card = run.scorecard
        score = run.score
        if card is not None:
            f.unscored_grades += len(card.unscored)
        if card is None or score is None:
            f.unscored += 1
            return
        self.scores.setdefault(run.case_id or "", []).append(score)
        self.scored += 1
        self.passes += passes(score, pass_score)
        for criterion, grade in card.criteria.items():
            if grade.score is None:
                self.criteria_unscored[criterion] = self.criteria_unscored.get(criterion, 0) + 1
                self.criteria_reasons.setdefault(criterion, []).append(grade.reason)
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
    return empty_tally(version.label, version.model)


def empty_tally(label: str, model: str) -> SideTally:
    """An empty tally of the side ``label`` (a version, or a proposal not yet a version) on ``model``."""
    return SideTally(SideFigures(version=label, model=model), model, {}, {}, {}, {})


def gate(
    paired: _stats.Paired | None,
    min_z: float,
    stopped: str | None,
    unmeasured: Sequence[str] = (),
    data: str = "held-out",
) -> tuple[GateOutcome, str]:
    """The promotion gate's decision and the reason in words. ``unmeasured`` says, for each criterion
    with no scored grade on a side, which and why: any makes the decision "not measured". ``data``
    names the cases in the reasons (``held-out``; ``optimize`` applies the rule to the cases it shows)."""
    kind = f"{data} " if data else ""
    if unmeasured:
        also = f"; the comparison also stopped early ({stopped})" if stopped else ""
        return "not measured", (
            f"{'; '.join(unmeasured)}: the gate cannot judge the candidate on what it did not measure; "
            f"make the grader score (the report lists why it did not) and propose again{also}"
        )
    if stopped:
        return "not passed", f"the comparison stopped early ({stopped}), so the data is incomplete"
    if paired is None or paired.cases == 0:
        return (
            "not passed",
            f"no {kind}case has scored runs of both versions, so there is nothing to compare",
        )
    if paired.diff <= 0:
        return "not passed", (
            f"the candidate's mean is not higher (difference {paired.diff:+.3f} over {paired.cases} cases)"
        )
    if paired.cases < 2:
        return "not passed", (
            f"only one {kind}case has scored runs of both versions: no standard error to judge by"
        )
    if paired.se == 0:
        return "passed", (
            f"every one of the {paired.cases} {kind}cases scored {paired.diff:+.3f} higher (standard error 0)"
        )
    z = paired.diff / paired.se
    if z >= min_z - Z_TOLERANCE:
        return "passed", (
            f"the candidate scored {paired.diff:+.3f} higher, {z:.2f} standard errors above zero "
            f"(at least {min_z:g} needed)"
        )
    return "not passed", (
        f"the candidate scored {paired.diff:+.3f} higher, only {z:.2f} standard errors above zero "
        f"({min_z:g} needed): not evidence that it is better"
    )


def measured(
    spec: Machine,
    live: Version | str,
    candidate: Version | str,
    sides: dict[str, SideTally],
    chosen: Sequence[Case],
    cases_file: str,
    trials: int,
    min_z: float,
    stopped: str | None,
    data: str = "held-out",
) -> GateReport:
    """The report of a finished comparison: each side's figures, each criterion before and after, the
    paired difference and the gate's decision. ``live`` and ``candidate`` are versions, or the labels
    their sides are kept under."""
    live_label = live if isinstance(live, str) else live.label
    candidate_label = candidate if isinstance(candidate, str) else candidate.label
    before, after = sides[live_label], sides[candidate_label]
    before.finish()
    after.finish()
    paired = None
    if any(before.scores.get(c.id) and after.scores.get(c.id) for c in chosen):
        paired = _stats.paired(before.scores, after.scores)
    criteria = {name: _criterion(before, after, name, c.weight) for name, c in spec.rubric.items()}
    labels = (f"live {live_label}", f"candidate {candidate_label}")
    outcome, decision = gate(paired, min_z, stopped, _unmeasured(criteria, labels), data)
    return GateReport(
        machine=spec.name,
        live=live_label,
        candidate=candidate_label,
        cases_file=cases_file,
        cases=len(chosen),
        trials=trials,
        before=before.figures,
        after=after.figures,
        criteria=criteria,
        diff=None if paired is None else paired.diff,
        se=None if paired is None else paired.se,
        z=None if paired is None else paired.z,
        paired_cases=0 if paired is None else paired.cases,
        min_z=min_z,
        outcome=outcome,
        passed=outcome == "passed",
        decision=decision,
        stopped=stopped,
    )


def _criterion(before: SideTally, after: SideTally, criterion: str, weight: float) -> CriterionFigures:
    """One criterion's mean and pass rate on each side, with its UNSCORED grades counted apart and
    their commonest reasons."""
    figures = CriterionFigures(
        weight=weight,
        unscored_before=before.criteria_unscored.get(criterion, 0),
        unscored_after=after.criteria_unscored.get(criterion, 0),
        unscored_reasons_before=count_reasons(before.criteria_reasons.get(criterion, [])),
        unscored_reasons_after=count_reasons(after.criteria_reasons.get(criterion, [])),
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


def _unmeasured(criteria: dict[str, CriterionFigures], labels: tuple[str, str]) -> list[str]:
    """For each criterion with no scored grade on a side, in words: where, and how many grades came
    back UNSCORED there (the report lists their reasons under the criterion)."""
    found = []
    for name, f in criteria.items():
        sides = [
            f"{label} ({unscored} UNSCORED)" if unscored else f"{label} (no run graded)"
            for label, measured, unscored in (
                (labels[0], f.measured_before, f.unscored_before),
                (labels[1], f.measured_after, f.unscored_after),
            )
            if not measured
        ]
        if sides:
            found.append(f"criterion {name!r} has no scored grade on {' nor on '.join(sides)}")
    return found
