"""The promotion gate: a candidate must beat the live version on the held-out cases by at least ``min_z``
standard errors of the per-case difference, on evidence enough to tell a gain from chance.

- A failed run (status error) is a failure of its side: it scores 0 there, on every criterion, never
  left out (a candidate that crashes on most cases must not pass on the rest).
- An UNSCORED grade is never a 0: it is counted apart. A side with a scored run on fewer than
  ``COVERAGE`` of the cases, or a criterion scored on fewer than that on a side (none at all, or one
  grade while nine came back UNSCORED), was not measured, and the decision is then "not measured": a
  run's score leaves its UNSCORED criteria out, so without this a candidate could be judged on the few
  cases, or the light criteria, that happened to be graded.
- Few cases are not evidence, however alike they moved: the cases that changed must be enough for an
  exact one-sided sign test to reach the level ``min_z`` stands for (``level``: 0.023 at 2, which takes
  6 cases that changed), else the decision is "not enough evidence". A standard error of 0 never passes
  by itself; the sign test's p-value is reported with the decision.
- No criterion the gate holds may get worse: a candidate whose per-case mean on a held criterion fell by
  ``min_z`` standard errors or more (or fell on every case alike) is refused, whatever its overall mean
  gained. The rubric's criteria marked ``required`` are held, or every criterion when none is marked: a
  rubric that checks only the form must not let a candidate through that forgot the answers.
- A comparison the budget cut short never passes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from machine.measure import stats as _stats
from machine.runs import Harness, Run, counted, endpoint_url, passes
from machine.spec import (
    Case,
    CriterionFigures,
    GateOutcome,
    GateReport,
    Machine,
    SideFigures,
    Version,
    count_reasons,
    needed_cases,
)

Z_TOLERANCE = 1e-9
"""A gain of exactly ``min_z`` standard errors reaches the gate, though its z came out a rounding error
short."""


def level(min_z: float) -> float:
    """The one-sided chance that ``min_z`` standard errors stand for (0.023 at 2): the sign test's bar."""
    return 0.5 * math.erfc(min_z / math.sqrt(2))


def evidence_floor(min_z: float) -> int:
    """How many cases must change for an exact sign test to reach ``level(min_z)`` at all (all of them
    rising): 6 at min_z 2, 1 at 0. Fewer is "not enough evidence", whatever the standard error says."""
    alpha = max(level(min_z), 2.0**-1074)
    return max(1, math.ceil(-math.log2(alpha) - 1e-9))


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
    undecided: int = 0
    """Scored runs an UNSCORED criterion could still turn: left out of the pass rate, as in a suite."""
    criteria_reasons: dict[str, list[str]] = field(default_factory=dict)
    """Each criterion's UNSCORED reasons, one per grade."""
    failed: int = 0
    """Failed runs: each a 0 of its case, and of every criterion."""
    harnesses: set[str] = field(default_factory=set)
    """The harnesses the side's runs ran on."""
    by_case: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Each criterion's scored grades by case (a failed run's 0s are in ``failed_cases``)."""
    failed_cases: dict[str, int] = field(default_factory=dict)
    """Failed runs by case."""

    def add(self, run: Run, *, how: Literal["reused", "regraded", "new"], pass_score: float) -> None:
        f = self.figures
        f.runs += 1
        setattr(f, how, getattr(f, how) + 1)
        if run.harness:
            self.harnesses.add(run.harness)
        if run.status == "error":  # a failure of this side, not a run to leave out
            f.errors += 1
            self.failed += 1
            self.failed_cases[run.case_id or ""] = self.failed_cases.get(run.case_id or "", 0) + 1
            self.scores.setdefault(run.case_id or "", []).append(0.0)
            self.scored += 1
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
        passed = card.passed_at(pass_score)
        self.passes += passed is True
        self.undecided += passed is None
        for criterion, grade in card.criteria.items():
            if grade.score is None:
                self.criteria_unscored[criterion] = self.criteria_unscored.get(criterion, 0) + 1
                self.criteria_reasons.setdefault(criterion, []).append(grade.reason)
                continue
            self.criteria.setdefault(criterion, []).append(grade.score)
            self.by_case.setdefault(criterion, {}).setdefault(run.case_id or "", []).append(grade.score)
            if passes(grade.score, pass_score):
                self.criteria_passes[criterion] = self.criteria_passes.get(criterion, 0) + 1

    def case_scores(self, criterion: str) -> dict[str, list[float]]:
        """One criterion's grades by case, a failed run counting as a 0 of it."""
        found = {case: list(scores) for case, scores in self.by_case.get(criterion, {}).items()}
        for case, failed in self.failed_cases.items():
            found.setdefault(case, []).extend([0.0] * failed)
        return found

    def finish(self, cases: Sequence[Case] | None = None) -> None:
        values = [s for scores in self.scores.values() for s in scores]
        self.figures.mean = _stats.mean(values) if values else None
        decided = self.scored - self.undecided
        self.figures.pass_rate = self.passes / decided if decided else None
        if self.harnesses:
            self.figures.harness = ", ".join(sorted(self.harnesses))
        if cases is not None:
            self.figures.cases_scored = sum(bool(self.scores.get(c.id)) for c in cases)


def tally_for(version: Version, harness: Harness | None = None) -> SideTally:
    """An empty tally of ``version``, to be run on ``harness``."""
    return empty_tally(version.label, version.model, harness)


def empty_tally(label: str, model: str, harness: Harness | None = None) -> SideTally:
    """An empty tally of the side ``label`` (a version, or a proposal not yet a version) on ``model``,
    run on ``harness`` (its name and endpoint are recorded in the report)."""
    figures = SideFigures(
        version=label,
        model=model,
        harness=None if harness is None else harness.name,
        endpoint=endpoint_url(harness),
    )
    return SideTally(figures, model, {}, {}, {}, {})


def gate(
    paired: _stats.Paired | None,
    min_z: float,
    stopped: str | None,
    unmeasured: Sequence[str] = (),
    data: str = "held-out",
    thin: Sequence[str] = (),
    worse: Sequence[str] = (),
) -> tuple[GateOutcome, str]:
    """The promotion gate's decision and the reason in words (see the module). ``unmeasured`` says, for
    each criterion scored on too few of the cases on a side (or none), which and why; ``thin``, each
    side scored on too few of the cases: either makes the decision "not measured". ``worse`` says how
    each held criterion the candidate is worse on fell: any makes it "not passed". ``data`` names the
    cases in the reasons (``held-out``; ``optimize`` applies the rule to the cases it shows)."""
    kind = f"{data} " if data else ""
    if unmeasured:
        also = f"; the comparison also stopped early ({stopped})" if stopped else ""
        return "not measured", (
            f"{'; '.join(unmeasured)}: the gate cannot judge the candidate on what it did not measure; "
            f"make the grader score (the report lists why it did not) and propose again{also}"
        )
    if stopped:
        return "not passed", f"the comparison stopped early ({stopped}), so the data is incomplete"
    if thin:
        return "not measured", (
            f"{'; '.join(thin)}: the gate cannot judge a side on the few cases that were scored; make "
            "the grader score (the report lists why it did not) and propose again"
        )
    if worse:
        return "not passed", (
            f"{'; '.join(worse)}: the gate refuses a candidate worse on a criterion it holds, whatever "
            "its mean gained"
        )
    if paired is None or paired.cases == 0:
        return (
            "not passed",
            f"no {kind}case has scored runs of both versions, so there is nothing to compare",
        )
    if paired.diff <= 0:
        return "not passed", (
            f"the candidate's mean is not higher (difference {paired.diff:+.3f} over "
            f"{counted(paired.cases, 'case')})"
        )
    if paired.cases < 2:
        return "not enough evidence", (
            f"only one {kind}case has scored runs of both versions: no standard error to judge by; "
            f"add {kind}cases"
        )
    z = paired.diff / paired.se if paired.se else None
    if z is not None and z < min_z - Z_TOLERANCE:
        return "not passed", (
            f"the candidate scored {paired.diff:+.3f} higher, only {z:.2f} standard errors above zero "
            f"({min_z:g} needed): not evidence that it is better"
        )
    return _evidence(paired, min_z, z, kind)


def _evidence(paired: _stats.Paired, min_z: float, z: float | None, kind: str) -> tuple[GateOutcome, str]:
    """A gain that reached ``min_z`` standard errors (or had none to reach): passed only when enough
    cases changed for the exact sign test to reach the same level."""
    moved, needed, alpha = paired.up + paired.down, evidence_floor(min_z), level(min_z)
    p = _stats.sign_test(paired.up, paired.down)
    sign = f"an exact sign test over the {moved} that changed gives p {p:.3g}"
    if moved < needed:
        return "not enough evidence", (
            f"only {moved} of the {paired.cases} {kind}cases changed ({paired.up} up, {paired.down} "
            f"down): {sign}, and it takes {needed} that changed to reach p {alpha:.3g} (min_z "
            f"{min_z:g}); add {kind}cases that tell the versions apart"
        )
    if z is None:
        return "passed", (
            f"every one of the {paired.cases} {kind}cases scored {paired.diff:+.3f} higher (standard "
            f"error 0): {sign} (at most {alpha:.3g} needed)"
        )
    return "passed", (
        f"the candidate scored {paired.diff:+.3f} higher, {z:.2f} standard errors above zero "
        f"(at least {min_z:g} needed); {sign}"
    )


def _thin(sides: tuple[tuple[str, SideTally], ...], chosen: Sequence[Case], data: str) -> list[str]:
    """Each side with a scored run on fewer than ``COVERAGE`` of the cases, in words."""
    need = needed_cases(len(chosen))
    kind = f"{data} " if data else ""
    found = []
    for label, side in sides:
        have = side.figures.cases_scored or 0
        if have < need:
            found.append(
                f"{label} has a scored run on only {have} of the {len(chosen)} {kind}cases "
                f"(at least {need} needed)"
            )
    return found


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
    held: Sequence[str] | None = None,
) -> GateReport:
    """The report of a finished comparison: each side's figures, each criterion before and after, the
    paired difference and the gate's decision. ``live`` and ``candidate`` are versions, or the labels
    their sides are kept under; ``held`` the criteria no candidate may be worse on (the rubric's
    ``held``: those marked required, else all)."""
    live_label = live if isinstance(live, str) else live.label
    candidate_label = candidate if isinstance(candidate, str) else candidate.label
    before, after = sides[live_label], sides[candidate_label]
    before.finish(chosen)
    after.finish(chosen)
    paired = None
    if any(before.scores.get(c.id) and after.scores.get(c.id) for c in chosen):
        paired = _stats.paired(before.scores, after.scores)
    holds = set(spec.rubric.held if held is None else held)
    criteria = {
        name: _criterion(before, after, name, c.weight, held=name in holds, min_z=min_z, cases=chosen)
        for name, c in spec.rubric.items()
    }
    labels = (f"live {live_label}", f"candidate {candidate_label}")
    thin = _thin(((labels[0], before), (labels[1], after)), chosen, data)
    worse = [_fell(name, f, data) for name, f in criteria.items() if f.worse]
    unmeasured = _unmeasured(criteria, ((labels[0], before), (labels[1], after)), len(chosen), data)
    outcome, decision = gate(paired, min_z, stopped, unmeasured, data, thin, worse)
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
        up=0 if paired is None else paired.up,
        down=0 if paired is None else paired.down,
        p_value=None if paired is None else paired.p_value,
        min_z=min_z,
        outcome=outcome,
        passed=outcome == "passed",
        decision=decision,
        stopped=stopped,
    )


def _criterion(
    before: SideTally,
    after: SideTally,
    criterion: str,
    weight: float,
    *,
    held: bool,
    min_z: float,
    cases: Sequence[Case],
) -> CriterionFigures:
    """One criterion's mean and pass rate on each side, with its UNSCORED grades counted apart and
    their commonest reasons, the ``cases`` it was scored on there, and its paired difference by case
    (``worse``: held, and fell by ``min_z`` standard errors, or on every case alike)."""
    figures = CriterionFigures(
        weight=weight,
        held=held,
        unscored_before=before.criteria_unscored.get(criterion, 0),
        unscored_after=after.criteria_unscored.get(criterion, 0),
        unscored_reasons_before=count_reasons(before.criteria_reasons.get(criterion, [])),
        unscored_reasons_after=count_reasons(after.criteria_reasons.get(criterion, [])),
    )
    for side, mean_field, rate_field in (
        (before, "before", "before_pass_rate"),
        (after, "after", "after_pass_rate"),
    ):
        values = side.criteria.get(criterion, []) + [0.0] * side.failed  # a failed run fails them all
        if values:
            setattr(figures, mean_field, _stats.mean(values))
            setattr(figures, rate_field, side.criteria_passes.get(criterion, 0) / len(values))
    before_cases, after_cases = before.case_scores(criterion), after.case_scores(criterion)
    figures.cases_before = sum(bool(before_cases.get(c.id)) for c in cases)
    figures.cases_after = sum(bool(after_cases.get(c.id)) for c in cases)
    if before_cases.keys() & after_cases.keys():
        p = _stats.paired(before_cases, after_cases)
        figures.diff, figures.se, figures.z, figures.paired_cases = p.diff, p.se, p.z, p.cases
        fell = p.cases >= 2 and p.diff < -_stats.MOVED
        figures.worse = held and fell and (p.z is None or p.z <= -min_z + Z_TOLERANCE)
    return figures


def _fell(name: str, f: CriterionFigures, data: str) -> str:
    """How a held criterion fell, in words."""
    by = "alike on every case (standard error 0)" if f.z is None else f"{-f.z:.2f} standard errors"
    kind = f"{data} " if data else ""
    return (
        f"criterion {name!r} fell from {f.before or 0:.3f} to {f.after or 0:.3f} ({f.diff or 0:+.3f} "
        f"over {f.paired_cases} {kind}cases, {by})"
    )


def _unmeasured(
    criteria: dict[str, CriterionFigures],
    sides: tuple[tuple[str, SideTally], tuple[str, SideTally]],
    cases: int,
    data: str,
) -> list[str]:
    """For each criterion not measured on a side, in words: where, and how many grades came back
    UNSCORED there (the report lists their reasons under the criterion). Not measured: no grade of it
    scored there, or scored on fewer than ``needed_cases`` of the cases (on a side scored on enough of
    them; a side that was not is said as such)."""
    need, kind = needed_cases(cases), f"{data} " if data else ""
    found = []
    for name, f in criteria.items():
        (live, before), (candidate, after) = sides
        shown = (
            (live, f.measured_before, f.unscored_before, f.cases_before, False, before),
            (candidate, f.measured_after, f.unscored_after, f.cases_after, True, after),
        )
        none = [
            f"{label} ({unscored} UNSCORED)" if unscored else f"{label} (no run graded)"
            for label, measured, unscored, _, _, _ in shown
            if not measured
        ]
        if none:
            found.append(f"criterion {name!r} has no scored grade on {' nor on '.join(none)}")
        found.extend(
            f"criterion {name!r} was scored on only {scored} of the {cases} {kind}cases on {label} "
            f"({unscored} UNSCORED; at least {need} needed)"
            for label, measured, unscored, scored, is_after, side in shown
            if measured and f.thin(is_after, side.figures, need)
        )
    return found
