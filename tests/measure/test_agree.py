"""Grader agreement on stored runs whose reference grades are known, with candidates whose scores are
chosen per run, so every figure is computed by hand below."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typesafe_sdk import NoulAnswer, SystemOneResponse
from typesafe_sdk import Usage as JevUsage

from machine import (
    Budget,
    Criterion,
    CriterionScore,
    GradeContext,
    Message,
    NotFoundError,
    Run,
    Scorecard,
    SQLiteStore,
    Usage,
    Workspace,
    open_workspace,
)
from machine.measure import agree, disagreeing
from machine.measure._agree import REASON_CHARS  # how much of a reason is kept, on purpose
from machine.runs import Effort, Timings, Turn

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric(
    {
        "polite": "The reply says please.",
        "short": "The reply is at most 10 characters long.",
    }
)


def _polite(run):
    if run.output == "?":
        return None  # not a score: UNSCORED
    return "please" in run.output


evaluator = define_evaluator(
    rubric,
    {
        "polite": check("says_please", _polite),
        "short": check("short", lambda run: len(run.output) <= 10),
    },
)

machine = define_machine(
    name="m",
    intent="Ask nicely.",
    instructions="Ask nicely.",
    model="echo",
    rubric=rubric,
    evaluator=evaluator,
)
"""

OTHER_PY = MACHINE_PY.replace('name="m"', 'name="other"')

START = datetime(2026, 1, 1, tzinfo=UTC)

# run id -> (stored reference score of "polite", or "unscored", "stale" (another rubric), None (no
# scorecard), "error" (a failed run); the run's output; the candidate's score, None for UNSCORED)
PLAN: dict[str, tuple[Any, str, float | None]] = {
    "r00": (1.0, "x", 0.9),
    "r01": (1.0, "x", 0.6),
    "r02": (1.0, "x", 0.2),
    "r03": (0.0, "x", 0.1),
    "r04": (0.0, "x", 0.4),
    "r05": (0.0, "x", 0.8),
    "r06": (1.0, "x", 1.0),
    "r07": (0.0, "x", 0.0),
    "r08": (1.0, "x", None),  # candidate UNSCORED: left out
    "r09": ("unscored", "please", 0.95),  # regraded by the check: 1
    "r10": ("error", "please", 0.5),  # a failed run: never considered
    "r11": (None, "please", 0.5),  # never graded: never considered
    "r12": ("stale", "please", 0.7),  # graded under another rubric (as 0): regraded to 1
    "r13": ("unscored", "?", 0.5),  # the regrade is UNSCORED too: left out
}


class Chosen:
    """A candidate grader giving each run the score chosen for it, recording the runs it graded."""

    kind = "test"
    name = "chosen"

    def __init__(self, scores: dict[str, float | None]) -> None:
        self.scores = scores
        self.graded: list[str] = []

    async def grade(self, run: Run, criterion: str, spec: Criterion, ctx: GradeContext) -> CriterionScore:
        self.graded.append(run.id)
        score = self.scores[run.id]
        reason = "no verdict" if score is None else f"chose {score} " + "because " * 60
        return CriterionScore(
            criterion=criterion, weight=spec.weight, grader="test:chosen", score=score, reason=reason
        )


def _card(fingerprint: str, score: float | None) -> Scorecard:
    return Scorecard(
        rubric_fingerprint=fingerprint,
        criteria={
            "polite": CriterionScore(
                criterion="polite", weight=1.0, grader="check:says_please", score=score, reason="stored"
            )
        },
    )


def store_plan(ws: Workspace, machine: str = "m") -> None:
    fingerprint = ws.load(machine).rubric.fingerprint
    store = ws.store
    for i, (run_id, (reference, output, _)) in enumerate(PLAN.items()):
        card: Scorecard | None
        status = "ok"
        if reference is None:
            card = None
        elif reference == "error":
            card, status = None, "error"
        elif reference == "unscored":
            card = _card(fingerprint, None)
        elif reference == "stale":
            card = _card("0000000000000000", 0.0)
        else:
            card = _card(fingerprint, float(reference))
        store.put(
            Run(
                id=run_id,
                machine=machine,
                model="echo",
                harness="echo",
                input="ask",
                output=output,
                status=status,  # type: ignore[arg-type]
                case_id=f"case-{run_id}",
                scorecard=card,
                timings=Timings(started_at=START + timedelta(seconds=i)),
            )
        )


def workspace(tmp_path: Path, **options: Any) -> Workspace:
    root = tmp_path / "ws"
    (root / "machines" / "m").mkdir(parents=True)
    (root / "machines" / "m" / "machine.py").write_text(MACHINE_PY)
    (root / "machines" / "other").mkdir(parents=True)
    (root / "machines" / "other" / "machine.py").write_text(OTHER_PY)
    return open_workspace(root, store=SQLiteStore(tmp_path / "store.db"), **options)


def chosen() -> Chosen:
    return Chosen({run_id: candidate for run_id, (_, _, candidate) in PLAN.items()})


def bits(cells: list[tuple[float, float, float]]) -> float:
    return sum(p * math.log2(p / (x * y)) for p, x, y in cells if p)


async def test_every_figure_by_hand(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    grader = chosen()
    report = await agree(ws, "m", "polite", candidate=grader, ctx=GradeContext())

    assert report.runs == 12  # r10 failed and r11 has no scorecard
    assert report.reference_reused == 9  # r00..r08
    assert report.reference_regraded == 3  # r09, r12 (to 1 by the check), r13 (UNSCORED again)
    assert report.reference_unscored == 1  # r13
    assert report.candidate_unscored == 1  # r08
    assert report.unscored_reasons == {"no verdict": 1}
    assert "r13" not in grader.graded  # no candidate call where the reference has no score
    assert sorted(grader.graded) == [
        "r00",
        "r01",
        "r02",
        "r03",
        "r04",
        "r05",
        "r06",
        "r07",
        "r08",
        "r09",
        "r12",
    ]
    assert report.n == 10
    assert report.reference_grader == "check:says_please"
    assert report.candidate_grader == "test:chosen"
    # Reference passes: r00 r01 r02 r06 r09 r12 (6); fails: r03 r04 r05 r07 (4).
    # Candidate scores 0.9 0.6 0.2 | 0.1 0.4 0.8 | 1.0 0.0 | 0.95 0.7.
    assert [row.threshold for row in report.thresholds] == [0.3, 0.5, 0.7]

    # At 0.5: both pass 5 (r00 r01 r06 r09 r12), reference only 1 (r02), candidate only 1 (r05), both fail 3.
    mid = report.at(0.5).stats
    assert mid.n == 10
    assert mid.agreement == pytest.approx(0.8)
    assert mid.kappa == pytest.approx((0.8 - 0.52) / (1 - 0.52))  # chance (6*6 + 4*4) / 100
    assert mid.false_pass_rate == pytest.approx(1 / 4)
    assert mid.false_fail_rate == pytest.approx(1 / 6)
    assert mid.precision == pytest.approx(5 / 6)
    assert mid.bits == pytest.approx(
        bits([(0.5, 0.6, 0.6), (0.1, 0.6, 0.4), (0.1, 0.4, 0.6), (0.3, 0.4, 0.4)])
    )
    kept = report.at(0.5).kept_bad
    assert kept[0.1] == pytest.approx(0.25 * 0.9 / (0.25 * 0.9 + 5 / 6 * 0.1))
    assert kept[0.5] == pytest.approx(0.25 * 0.5 / (0.25 * 0.5 + 5 / 6 * 0.5))

    # At 0.3: both pass 5, reference only 1 (r02), candidate only 2 (r04 r05), both fail 2 (r03 r07).
    low = report.at(0.3).stats
    assert low.agreement == pytest.approx(0.7)
    assert low.kappa == pytest.approx((0.7 - 0.54) / (1 - 0.54))  # chance (6*7 + 4*3) / 100
    assert low.false_pass_rate == pytest.approx(0.5)
    assert low.false_fail_rate == pytest.approx(1 / 6)
    assert low.precision == pytest.approx(5 / 7)
    assert report.at(0.3).kept_bad[0.1] == pytest.approx(0.5 * 0.9 / (0.5 * 0.9 + 5 / 6 * 0.1))

    # At 0.7 (0.7 itself passes): both pass 4 (r00 r06 r09 r12), reference only 2 (r01 r02),
    # candidate only 1 (r05), both fail 3.
    high = report.at(0.7).stats
    assert high.agreement == pytest.approx(0.7)
    assert high.kappa == pytest.approx((0.7 - 0.5) / (1 - 0.5))  # chance (6*5 + 4*5) / 100
    assert high.false_pass_rate == pytest.approx(0.25)
    assert high.false_fail_rate == pytest.approx(1 / 3)
    assert high.precision == pytest.approx(4 / 5)
    assert report.at(0.7).kept_bad[0.5] == pytest.approx(0.25 * 0.5 / (0.25 * 0.5 + 2 / 3 * 0.5))

    assert {d.pair.run_id: d.at for d in report.disagreements} == {
        "r01": (0.7,),
        "r02": (0.3, 0.5, 0.7),
        "r04": (0.3,),
        "r05": (0.3, 0.5, 0.7),
    }
    assert [d.pair.run_id for d in report.disagreements[:2]] == ["r02", "r05"]  # widest gaps first
    first = report.disagreements[0].pair
    assert (first.reference, first.candidate, first.case_id) == (1.0, 0.2, "case-r02")
    assert len(first.reason) == REASON_CHARS and first.reason.endswith("…")
    assert report.unsure == 3  # r01 0.6, r04 0.4, r12 0.7

    data = json.loads(json.dumps(report.model_dump(mode="json", by_alias=True)))
    assert data["n"] == 10 and data["unsure"] == 3 and data["candidate_unscored"] == 1
    assert data["reference"] == {"grader": "check:says_please", "pass_mark": 0.5}
    row = data["thresholds"][1]
    assert row["threshold"] == 0.5 and row["agreement"] == pytest.approx(0.8)
    assert [k["base_pass_rate"] for k in row["kept_bad"]] == [0.1, 0.5]
    assert data["disagreements"][0]["run_id"] == "r02" and data["disagreements"][0]["at"] == [0.3, 0.5, 0.7]
    # the disagreements are kept for a review (the dashboard's queue), widest gap first
    assert disagreeing(ws, report.machine) == [d.pair.run_id for d in report.disagreements]
    kept = json.loads((ws.data_dir / "agreements" / f"{report.machine}.json").read_text())
    assert kept[report.criterion]["candidate"] == report.candidate_grader
    # agree changes no stored run: the regraded references are not written back.
    stored = ws.store.get("r09").scorecard
    assert stored is not None and stored.criteria["polite"].score is None


async def test_limit_takes_the_newest_runs(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    grader = chosen()
    report = await agree(ws, "m", "polite", candidate=grader, limit=3, ctx=GradeContext())
    assert report.runs == 3  # r09, r12, r13: the newest three finished and graded
    assert sorted(grader.graded) == ["r09", "r12"]
    assert report.n == 2 and report.reference_unscored == 1 and not report.disagreements


async def test_each_candidate_grade_is_told_as_it_comes(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    grader = chosen()
    told: list[tuple[str, float | None]] = []
    await agree(
        ws, "m", "polite", candidate=grader, limit=3, ctx=GradeContext(),
        on_grade=lambda run, score: told.append((run.id, score.score)),
    )  # fmt: skip
    assert sorted(run_id for run_id, _ in told) == sorted(grader.graded) == ["r09", "r12"]


async def test_without_regrading_stale_references_are_left_out(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate=chosen(), regrade=False, ctx=GradeContext())
    assert (report.reference_stale, report.reference_regraded, report.reference_unscored) == (3, 0, 0)
    assert report.n == 8


async def test_chosen_thresholds(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate=chosen(), thresholds=[0.5], ctx=GradeContext())
    assert [row.threshold for row in report.thresholds] == [0.5]
    assert {d.pair.run_id: d.at for d in report.disagreements} == {"r02": (0.5,), "r05": (0.5,)}


async def test_a_candidate_that_raises_is_unscored_not_a_crash(tmp_path: Path) -> None:
    class Broken(Chosen):
        async def grade(self, run: Run, criterion: str, spec: Criterion, ctx: GradeContext) -> CriterionScore:
            raise RuntimeError("boom")

    ws = workspace(tmp_path)
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate=Broken({}), ctx=GradeContext())
    assert report.n == 0 and report.candidate_unscored == 11
    assert report.unscored_reasons == {"grader test:chosen raised RuntimeError: boom": 11}
    assert report.at(0.5).stats.agreement is None and report.at(0.5).kept_bad == {0.1: None, 0.5: None}


async def test_errors_name_what_to_do(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store_plan(ws)
    with pytest.raises(NotFoundError, match="criteria are: polite, short"):
        await agree(ws, "m", "kind", candidate=chosen(), ctx=GradeContext())
    with pytest.raises(NotFoundError, match=r"no graded runs.*run a suite"):
        await agree(ws, "other", "polite", candidate=chosen(), ctx=GradeContext())
    with pytest.raises(NotFoundError):
        await agree(ws, "nope", "polite", candidate=chosen(), ctx=GradeContext())
    with pytest.raises(Exception, match="not a candidate grader"):
        await agree(ws, "m", "polite", candidate="oracle", ctx=GradeContext())
    with pytest.raises(Exception, match="effort"):
        await agree(ws, "m", "polite", candidate="judge", judge_effort="huge", ctx=GradeContext())


class Models:
    """A judge that says 1 to runs whose output says please and 0 to the others; records each call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        effort: Effort | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        budget: Budget | None = None,
        kind: str = "grading",
    ) -> Turn:
        self.calls.append({"model": model, "effort": effort, "temperature": temperature, "seed": seed})
        output = messages[-1]["content"].split("## Final output\n")[-1]
        score = 1 if "please" in output else 0
        reply = json.dumps({"criteria": {"polite": {"reason": f"judged {output}", "score": score}}})
        return Turn(Message(role="assistant", content=reply), Usage(input_tokens=1000, output_tokens=100))


async def test_with_judge_uses_the_given_model_and_effort(tmp_path: Path) -> None:
    models = Models()
    budget = Budget(None)
    ws = workspace(
        tmp_path, models=models, budget=budget, judge_model="elsewhere/ignored", judge_effort="high"
    )
    store_plan(ws)
    report = await agree(
        ws, "m", "polite", candidate="judge", judge_model="thinkingmachines/Inkling-Small", judge_effort="low"
    )
    assert len(models.calls) == 11  # one call per run with a scored reference
    assert {c["model"] for c in models.calls} == {"thinkingmachines/Inkling-Small"}
    assert {c["effort"].name for c in models.calls} == {"low"}
    assert {c["temperature"] for c in models.calls} == {0.0}
    assert report.candidate_grader == "judge:thinkingmachines/Inkling-Small at low"
    # The judge says 0 to every "x" output and 1 to "please": it fails r00 r01 r02 r06 r08, passes r09 r12.
    assert report.n == 11 and report.candidate_unscored == 0
    stats = report.at(0.5).stats
    assert stats.false_pass_rate == 0.0 and stats.false_fail_rate == pytest.approx(5 / 7)
    assert stats.precision == 1.0
    assert report.candidate_cost_usd == pytest.approx(budget.spent_by_kind["grading"]) and budget.spent > 0


async def test_with_judge_defaults_to_the_workspace_judge_model(tmp_path: Path) -> None:
    models = Models()
    ws = workspace(tmp_path, models=models, budget=Budget(None), judge_model="thinkingmachines/Inkling-Small")
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate="judge", limit=2)  # r12 and r13 (UNSCORED reference)
    assert report.candidate_grader == "judge:thinkingmachines/Inkling-Small at medium"
    assert [c["effort"].name for c in models.calls] == ["medium"]


class JevStandIn:
    """Takes the place of TypeSafe's client: P(yes) 0.9 for an output saying please, 0.35 otherwise."""

    def __init__(self) -> None:
        self.questions: list[Any] = []

    async def system_one(self, state: Any, questions: Any, *, model: str | None = None) -> Any:
        self.questions.append(dict(questions))
        p = 0.9 if "please" in state["output"] else 0.35
        return SystemOneResponse(
            model="jev-test",
            usage=JevUsage(input_tokens=10, output_tokens=1),
            answers={"polite": NoulAnswer(noul=p)},
        )


async def test_with_jev_asks_the_criterion_as_a_yes_no_question(tmp_path: Path) -> None:
    client = JevStandIn()
    ws = workspace(tmp_path)
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate="jev", ctx=GradeContext(jev_client=client))
    assert len(client.questions) == 11
    assert client.questions[0]["polite"].instructions == "The reply says please."
    assert report.candidate_grader.startswith("jev:noul")
    assert report.n == 11
    assert report.unsure == 9  # every "x" output got 0.35
    # At 0.3 Jev passes everything: false-pass rate 1 over the 4 reference fails.
    assert report.at(0.3).stats.false_pass_rate == 1.0
    assert report.at(0.5).stats.false_fail_rate == pytest.approx(5 / 7)


async def test_with_jev_and_no_key_every_candidate_is_unscored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    ws = workspace(tmp_path)
    store_plan(ws)
    report = await agree(ws, "m", "polite", candidate="jev", ctx=GradeContext())
    assert report.n == 0 and report.candidate_unscored == 11
    (reason,) = report.unscored_reasons
    assert "TYPESAFE_API_KEY" in reason
