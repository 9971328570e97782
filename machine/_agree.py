"""Agreement: how well a candidate grader (a cheap judge, Jev) reproduces a machine's own grader.

``agree(ws, name, criterion, candidate="judge" | "jev" | Grader)`` takes the machine's stored runs that
finished (status ``ok``) and have a scorecard, newest ``limit`` of them, and compares two grades of
``criterion`` on each:

- The REFERENCE is the machine's own grader. Its stored grade is reused when it is scored and was made
  under the machine's current rubric (the scorecard's rubric fingerprint). A run whose stored grade is
  missing, UNSCORED or made under another rubric is graded again with the machine's own grader for that
  criterion (charged to the budget like any grading, and NOT written back: ``agree`` changes no run);
  with ``regrade=False`` such runs are left out and counted as stale instead. A reference that is still
  UNSCORED is left out and counted. The reference passes when its score is at least ``REFERENCE_PASS``
  (0.5): a criterion score, not the run's pass score, and the same mark at which a Jev probability
  reads "yes".
- The CANDIDATE grades the same criterion of the same runs, one call per run, at most ``concurrency``
  at once, charged to the budget. ``"judge"`` is ``judge()`` at the given model and effort (else the
  workspace's judge model, else the default, at medium effort); ``"jev"`` is ``jev().noul()`` with the
  criterion's description as the question. UNSCORED candidate grades (no key, a failed call, the budget
  spent, an unusable reply) are counted with their reasons and left out of every figure (peers note 1).

For each threshold T on the candidate's score (a candidate label passes at score >= T) the report gives
the ``_stats.agreement`` figures against the reference labels (agreement, Cohen's kappa, false-pass and
false-fail rates, precision, bits per label) and, from the false-pass rate and the true-pass rate
(1 - false-fail rate), the share of bad samples a filter using the candidate would keep at base pass rates
of 10% and 50%. A run is listed as a disagreement when the two labels differ at any reported threshold
(with the thresholds at which they do). A candidate is unsure when its probability of passing
(``details["probability"]`` where the grader gives one, as Jev does, else its score) lies in [0.3, 0.7].
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from . import _stats
from ._effort import parse_effort
from ._errors import BadInputError, NotFoundError
from ._graders import GradeContext, Grader, unscored
from ._jev import jev
from ._judge import DEFAULT_JUDGE_EFFORT, DEFAULT_JUDGE_MODEL, judge
from ._rubric import Criterion
from ._runs import CriterionScore, Run
from ._workspace import Workspace

REFERENCE_PASS = 0.5
"""The reference grade passes at a score of at least this."""
THRESHOLDS = (0.3, 0.5, 0.7)
BASE_PASS_RATES = (0.1, 0.5)
REASON_CHARS = 200
"""Candidate reasons in the disagreement list are cut to this many characters."""
CANDIDATES = ("judge", "jev")


@dataclass(frozen=True)
class Pair:
    """One run graded by both: the reference's score and the candidate's."""

    run_id: str
    case_id: str | None
    reference: float
    candidate: float
    reason: str
    """The candidate's reason, cut to REASON_CHARS."""
    probability: float
    """The candidate's probability of passing (Jev's), else its score."""

    @property
    def unsure(self) -> bool:
        return _stats.unsure(self.probability)


@dataclass(frozen=True)
class AtThreshold:
    """The figures at one threshold on the candidate's score."""

    threshold: float
    stats: _stats.Agreement
    kept_bad: dict[float, float | None]
    """Base pass rate -> share of bad samples among those a candidate filter keeps; None when a rate
    it needs has no data (no reference passes or no reference fails)."""

    def to_json(self) -> dict[str, Any]:
        s = self.stats
        return {
            "threshold": self.threshold,
            "n": s.n,
            "agreement": s.agreement,
            "kappa": s.kappa,
            "false_pass_rate": s.false_pass_rate,
            "false_fail_rate": s.false_fail_rate,
            "precision": s.precision,
            "bits": s.bits,
            "kept_bad": [{"base_pass_rate": base, "share": share} for base, share in self.kept_bad.items()],
        }


@dataclass(frozen=True)
class Disagreement:
    pair: Pair
    at: tuple[float, ...]
    """The thresholds at which the candidate's label differs from the reference's."""

    def to_json(self) -> dict[str, Any]:
        p = self.pair
        return {
            "run": p.run_id,
            "case": p.case_id,
            "reference": p.reference,
            "candidate": p.candidate,
            "reason": p.reason,
            "at": list(self.at),
        }


@dataclass
class AgreementReport:
    machine: str
    criterion: str
    reference_grader: str
    candidate_grader: str
    runs: int
    """Runs considered: finished, with a scorecard (the newest ``limit``)."""
    reference_reused: int = 0
    reference_regraded: int = 0
    reference_stale: int = 0
    """Runs left out because their stored reference was unusable and regrading was off."""
    reference_unscored: int = 0
    """Runs left out because the reference stayed UNSCORED (after regrading, when on)."""
    candidate_unscored: int = 0
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    """Why candidates were UNSCORED, with how many times each reason came."""
    reference_unscored_reasons: dict[str, int] = field(default_factory=dict)
    """Why references stayed UNSCORED after regrading, with counts."""
    pairs: list[Pair] = field(default_factory=list)
    thresholds: list[AtThreshold] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    reference_cost_usd: float = 0.0
    candidate_cost_usd: float = 0.0

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def unsure(self) -> int:
        return sum(1 for p in self.pairs if p.unsure)

    def at(self, threshold: float) -> AtThreshold:
        for row in self.thresholds:
            if row.threshold == threshold:
                return row
        raise KeyError(threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "criterion": self.criterion,
            "reference": {"grader": self.reference_grader, "pass_mark": REFERENCE_PASS},
            "candidate": {"grader": self.candidate_grader},
            "runs": self.runs,
            "n": self.n,
            "reference_reused": self.reference_reused,
            "reference_regraded": self.reference_regraded,
            "reference_stale": self.reference_stale,
            "reference_unscored": self.reference_unscored,
            "candidate_unscored": self.candidate_unscored,
            "unscored_reasons": [{"reason": r, "count": c} for r, c in self.unscored_reasons.items()],
            "reference_unscored_reasons": [
                {"reason": r, "count": c} for r, c in self.reference_unscored_reasons.items()
            ],
            "unsure": self.unsure,
            "thresholds": [row.to_json() for row in self.thresholds],
            "disagreements": [d.to_json() for d in self.disagreements],
            "cost_usd": {"reference": self.reference_cost_usd, "candidate": self.candidate_cost_usd},
        }


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
    raise BadInputError(f"--with {candidate!r} is not a candidate grader: use one of {', '.join(CANDIDATES)}")


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
    concurrency: int = 4,
    judge_model: str | None = None,
    judge_effort: str | None = None,
    regrade: bool = True,
    ctx: GradeContext | None = None,
) -> AgreementReport:
    """Grade ``name``'s stored runs on ``criterion`` with ``candidate`` and compare with its own grader.

    ``judge_model``/``judge_effort`` set the candidate judge (``judge_model`` also names the Jev model
    for ``"jev"``); the reference is graded as ``machine eval`` would grade it. ``ctx`` replaces the
    workspace's grading context (budget, model access, Jev client) for both graders.
    """
    if limit is not None and limit < 1:
        raise BadInputError(f"--limit must be at least 1, got {limit}")
    if concurrency < 1:
        raise BadInputError(f"--concurrency must be at least 1, got {concurrency}")
    marks = sorted(set(float(t) for t in thresholds))
    if not marks or any(not 0.0 <= t <= 1.0 for t in marks):
        raise BadInputError(f"thresholds must be numbers in [0, 1], got {list(thresholds)!r}")
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
            f"{name} has no graded runs to compare graders on: run a suite first (`machine suite {name}`)"
        )
    base = ctx or GradeContext(
        budget=ws.budget, judge_model=ws.judge_model, judge_effort=ws.judge_effort, models=ws.models
    )
    # The candidate judge carries its own model and effort; the workspace's overrides must not replace them.
    candidate_ctx = (
        dataclasses.replace(base, judge_model=None, judge_effort=None) if candidate == "judge" else base
    )
    own = spec.evaluator.graders[criterion]
    criterion_spec = spec.rubric[criterion]
    fingerprint = spec.rubric.fingerprint
    report = AgreementReport(
        machine=name,
        criterion=criterion,
        reference_grader=_label(own),
        candidate_grader=grader_label,
        runs=len(runs),
    )
    limiter = anyio.CapacityLimiter(concurrency)
    references: dict[str, CriterionScore] = {}
    candidates: dict[str, CriterionScore] = {}

    async def reference(run: Run) -> None:
        assert run.scorecard is not None
        stored = run.scorecard.criteria.get(criterion)
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
        async with limiter:
            graded = await _grade(own, run, criterion, criterion_spec, base)
        report.reference_regraded += 1
        report.reference_cost_usd += graded.cost_usd
        references[run.id] = graded

    async def grade_candidate(run: Run) -> None:
        async with limiter:
            candidates[run.id] = await _grade(grader, run, criterion, criterion_spec, candidate_ctx)

    async with anyio.create_task_group() as group:
        for run in runs:
            group.start_soon(reference, run)
    scored_refs = [r for r in runs if r.id in references and references[r.id].score is not None]
    report.reference_unscored = sum(1 for r in runs if r.id in references) - len(scored_refs)
    report.reference_unscored_reasons = dict(
        Counter(
            references[r.id].reason or "no reason given"
            for r in runs
            if r.id in references and references[r.id].score is None
        ).most_common()
    )
    async with anyio.create_task_group() as group:
        for run in scored_refs:
            group.start_soon(grade_candidate, run)

    reasons: Counter[str] = Counter()
    for run in scored_refs:  # oldest first, as stored
        got = candidates[run.id]
        report.candidate_cost_usd += got.cost_usd
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
    report.thresholds = [_at(report.pairs, t) for t in marks]
    for pair in report.pairs:
        ref_pass = pair.reference >= REFERENCE_PASS
        at = tuple(t for t in marks if (pair.candidate >= t) != ref_pass)
        if at:
            report.disagreements.append(Disagreement(pair, at))
    report.disagreements.sort(key=lambda d: -abs(d.pair.reference - d.pair.candidate))
    return report


def _at(pairs: Sequence[Pair], threshold: float) -> AtThreshold:
    reference = [p.reference >= REFERENCE_PASS for p in pairs]
    stats = _stats.agreement(reference, _stats.thresholded([p.candidate for p in pairs], threshold))
    kept: dict[float, float | None] = {}
    for base_rate in BASE_PASS_RATES:
        fpr, ffr = stats.false_pass_rate, stats.false_fail_rate
        kept[base_rate] = (
            None if fpr is None or ffr is None else _stats.kept_bad_share(fpr, 1 - ffr, base_rate)
        )
    return AtThreshold(threshold, stats, kept)


def _cut(reason: str) -> str:
    reason = " ".join(reason.split())
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
