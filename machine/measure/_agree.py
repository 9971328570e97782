"""Agreement: how well a candidate grader (a cheap judge, Jev) reproduces a machine's own grader on its
stored runs, threshold by threshold, with the disagreements listed. Stored reference grades are reused
(or graded again, never written back); UNSCORED grades are counted apart. docs/concepts.md has the rest.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from machine.errors import BadInputError, Fix, NotFoundError
from machine.grade import (
    DEFAULT_JUDGE_EFFORT,
    DEFAULT_JUDGE_MODEL,
    Criterion,
    GradeContext,
    Grader,
    jev,
    judge,
    unscored,
)
from machine.runs import CriterionScore, Run, parse_effort
from machine.spec import Machine
from machine.workspace import Workspace

from ._agreement_report import AgreementReport, AtThreshold, Disagreement, GraderInfo, Pair
from ._disagreements import keep
from ._options import MeasureOptions
from .stats import agreement, kept_bad_share, thresholded

REFERENCE_PASS = 0.5
"""The reference grade passes at a score of at least this."""
THRESHOLDS = (0.3, 0.5, 0.7)
BASE_PASS_RATES = (0.1, 0.5)
REASON_CHARS = 200
"""Candidate reasons in the disagreement list are cut to this many characters."""
CANDIDATES = ("judge", "jev")


def _label(grader: Grader) -> str:
    return f"{grader.kind}:{grader.name}"


def candidate_grader(
    candidate: Grader | str, *, judge_model: str | None = None, judge_effort: str | None = None
) -> tuple[Grader, str]:
    """The candidate grader and how the report names it."""
    if not isinstance(candidate, str):
        if not isinstance(candidate, Grader):
            raise BadInputError(f"candidate must be 'judge', 'jev' or a grader, not {candidate!r}")
        return candidate, _label(candidate)
    if candidate == "judge":
        effort = parse_effort(
            judge_effort or DEFAULT_JUDGE_EFFORT
        )  # a bad effort fails here, before any call
        model = judge_model or DEFAULT_JUDGE_MODEL
        return judge(model=model, effort=judge_effort or DEFAULT_JUDGE_EFFORT), f"judge:{model} at {effort}"
    if candidate == "jev":
        grader = jev(model=judge_model).noul()
        return grader, f"jev:noul ({judge_model or 'default model'})"
    raise BadInputError(f"{candidate!r} is not a candidate grader: use one of {', '.join(CANDIDATES)}")


def _eligible(ws: Workspace, name: str, limit: int | None) -> list[Run]:
    """The newest ``limit`` finished runs with a scorecard, oldest first."""
    kept: deque[Run] = deque(maxlen=limit)
    for run in ws.store.iter_runs(name):
        if run.status == "ok" and run.scorecard is not None:
            kept.append(run)
    return list(kept)


async def _grade(
    grader: Grader, run: Run, criterion: str, spec: Criterion, ctx: GradeContext
) -> CriterionScore:
    """One grade; a grader that raises leaves the criterion UNSCORED, as the evaluator does."""
    try:
        return await grader.grade(run, criterion, spec, ctx)
    except Exception as error:
        return unscored(
            criterion, spec, grader, f"grader {_label(grader)} raised {type(error).__name__}: {error}"
        )


async def agree(
    ws: Workspace,
    name: str,
    criterion: str,
    *,
    candidate: Grader | str,
    limit: int | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
    concurrency: int = MeasureOptions.default("concurrency"),
    judge_model: str | None = None,
    judge_effort: str | None = None,
    regrade: bool = True,
    ctx: GradeContext | None = None,
    on_grade: Callable[[Run, CriterionScore], None] | None = None,
) -> AgreementReport:
    """Grade ``name``'s stored runs on ``criterion`` with ``candidate`` and compare with its own grader.

    ``judge_model``/``judge_effort`` set the candidate judge (``judge_model`` also names the Jev model
    for ``"jev"``); the reference is graded as grading a stored run would grade it. ``ctx`` replaces the
    workspace's grading context (budget, model access, Jev client) for both graders. ``on_grade`` sees
    each candidate grade as it comes.
    """
    marks = _checked(limit, concurrency, thresholds)
    spec = ws.load(name)
    if criterion not in spec.rubric:
        raise NotFoundError(
            f"{name} has no criterion {criterion!r}; its criteria are: {', '.join(spec.rubric)}"
        )
    if judge_model is None and candidate == "judge":
        judge_model = ws.judge_model
    grader, grader_label = candidate_grader(candidate, judge_model=judge_model, judge_effort=judge_effort)
    runs = _eligible(ws, name, limit)
    if not runs:
        raise NotFoundError(
            f"{name} has no graded runs to compare graders on: run a suite first",
            fixes=[Fix(operation="suite", machine=name, purpose="makes some")],
        )
    base, candidate_ctx = _contexts(ws, ctx, candidate)
    own = spec.evaluator.graders[criterion]
    report = AgreementReport(
        machine=name,
        criterion=criterion,
        reference=GraderInfo(grader=_label(own), pass_mark=REFERENCE_PASS),
        candidate=GraderInfo(grader=grader_label),
        runs=len(runs),
    )
    graders = _Graders(spec, criterion, anyio.CapacityLimiter(concurrency), base, candidate_ctx, own, grader)
    references = await _references(report, runs, graders, regrade)
    scored = [r for r in runs if r.id in references and references[r.id].score is not None]
    candidates = await _candidates(graders, scored, on_grade)
    _pair_up(report, scored, references, candidates)
    _figures(report, marks)
    keep(ws, report)
    return report


async def _candidates(
    graders: _Graders, runs: Sequence[Run], on_grade: Callable[[Run, CriterionScore], None] | None
) -> dict[str, CriterionScore]:
    """The candidate's grade of each run, concurrently, each told as it comes."""
    candidates: dict[str, CriterionScore] = {}

    async def grade_candidate(run: Run) -> None:
        candidates[run.id] = await graders.candidate_grade(run)
        if on_grade is not None:
            on_grade(run, candidates[run.id])

    async with anyio.create_task_group() as group:
        for run in runs:
            group.start_soon(grade_candidate, run)
    return candidates


def _contexts(
    ws: Workspace, ctx: GradeContext | None, candidate: Grader | str
) -> tuple[GradeContext, GradeContext]:
    """The reference's grading context and the candidate's: a candidate judge carries its own model and
    effort, which the workspace's judge settings must not replace."""
    base = ctx or GradeContext(
        budget=ws.budget, judge_model=ws.judge_model, judge_effort=ws.judge_effort, models=ws.models
    )
    return base, dataclasses.replace(
        base, judge_model=None, judge_effort=None
    ) if candidate == "judge" else base


def _checked(limit: int | None, concurrency: int, thresholds: Sequence[float]) -> list[float]:
    """The thresholds, sorted, once every setting is checked."""
    if limit is not None and limit < 1:
        raise BadInputError(f"limit must be at least 1, got {limit}")
    if concurrency < 1:
        raise BadInputError(f"concurrency must be at least 1, got {concurrency}")
    marks = sorted(set(float(t) for t in thresholds))
    if not marks or any(not 0.0 <= t <= 1.0 for t in marks):
        raise BadInputError(f"thresholds must be numbers in [0, 1], got {list(thresholds)!r}")
    return marks


def _figures(report: AgreementReport, marks: list[float]) -> None:
    """The figures at each threshold, and the disagreements, widest gap first."""
    report.thresholds = [_at(report.pairs, t) for t in marks]
    for pair in report.pairs:
        ref_pass = pair.reference >= REFERENCE_PASS
        at = tuple(t for t in marks if (pair.candidate >= t) != ref_pass)
        if at:
            report.disagreements.append(Disagreement(pair=pair, at=at))
    report.disagreements.sort(key=lambda d: -abs(d.pair.reference - d.pair.candidate))


@dataclass(frozen=True)
class _Graders:
    """The two graders of one criterion, each with its context, sharing one limit on calls in flight."""

    spec: Machine
    criterion: str
    limiter: anyio.CapacityLimiter
    base: GradeContext
    candidate_ctx: GradeContext
    own: Grader
    candidate: Grader

    async def reference_grade(self, run: Run) -> CriterionScore:
        async with self.limiter:
            return await _grade(self.own, run, self.criterion, self.spec.rubric[self.criterion], self.base)

    async def candidate_grade(self, run: Run) -> CriterionScore:
        async with self.limiter:
            definition = self.spec.rubric[self.criterion]
            return await _grade(self.candidate, run, self.criterion, definition, self.candidate_ctx)


async def _references(
    report: AgreementReport, runs: list[Run], graders: _Graders, regrade: bool
) -> dict[str, CriterionScore]:
    """Each run's reference grade: the stored one when scored under the current rubric, else graded
    again (unless ``regrade`` is off: then the run is left out as stale)."""
    fingerprint = graders.spec.rubric.fingerprint
    references: dict[str, CriterionScore] = {}

    async def reference(run: Run) -> None:
        assert run.scorecard is not None
        stored = run.scorecard.criteria.get(graders.criterion)
        if (
            stored is not None
            and stored.score is not None
            and run.scorecard.rubric_fingerprint == fingerprint
        ):
            report.reference_reused += 1
            references[run.id] = stored
            return
        if not regrade:
            report.reference_stale += 1
            return
        graded = await graders.reference_grade(run)
        report.reference_regraded += 1
        report.cost_usd.reference += graded.cost_usd
        references[run.id] = graded

    async with anyio.create_task_group() as group:
        for run in runs:
            group.start_soon(reference, run)
    unscored = [references[r.id] for r in runs if r.id in references and references[r.id].score is None]
    report.reference_unscored = len(unscored)
    report.reference_unscored_reasons = dict(
        Counter(g.reason or "no reason given" for g in unscored).most_common()
    )
    return references


def _pair_up(
    report: AgreementReport,
    scored: list[Run],
    references: dict[str, CriterionScore],
    candidates: dict[str, CriterionScore],
) -> None:
    """The report's pairs, oldest run first; UNSCORED candidates counted with their reasons."""
    reasons: Counter[str] = Counter()
    for run in scored:
        got = candidates[run.id]
        report.cost_usd.candidate += got.cost_usd
        ref_score = references[run.id].score
        assert ref_score is not None
        if got.score is None:
            report.candidate_unscored += 1
            reasons[got.reason or "no reason given"] += 1
            continue
        probability = got.details.get("probability")
        if not isinstance(probability, int | float) or isinstance(probability, bool):
            probability = got.score
        report.pairs.append(
            Pair(
                run_id=run.id,
                case_id=run.case_id,
                reference=ref_score,
                candidate=got.score,
                reason=_cut(got.reason),
                probability=float(probability),
            )
        )
    report.unscored_reasons = dict(reasons.most_common())


def _at(pairs: Sequence[Pair], threshold: float) -> AtThreshold:
    reference = [p.reference >= REFERENCE_PASS for p in pairs]
    figures = agreement(reference, thresholded([p.candidate for p in pairs], threshold))
    kept: dict[float, float | None] = {}
    for base_rate in BASE_PASS_RATES:
        fpr, ffr = figures.false_pass_rate, figures.false_fail_rate
        kept[base_rate] = None if fpr is None or ffr is None else kept_bad_share(fpr, 1 - ffr, base_rate)
    return AtThreshold(threshold=threshold, kept_bad=kept, **dataclasses.asdict(figures))


def _cut(reason: str) -> str:
    reason = " ".join(reason.split())
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
