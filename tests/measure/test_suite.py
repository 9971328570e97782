"""run_suite on a real workspace in tmp_path: order, the concurrency bound, unscored and failed runs,
budgets, and the report's JSON shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from machine import (
    BadInputError,
    Budget,
    Case,
    Machine,
    Run,
    SQLiteStore,
    ToolContext,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    judge,
    open_workspace,
    run_suite,
    tool,
)
from machine.clients.echo import EchoHarness
from machine.clients.scripted import Script, ScriptedHarness

CASES = [
    Case(id="ann", input="greet ann"),
    Case(id="bob", input="greet bob"),
    Case(id="cat", input="greet cat"),
]

# ann scores 1.0, bob (2 + 0.5) / 3, cat 1 / 3; "warm" is a judge, UNSCORED in this build.
REPLIES = {"ann": "hello ann", "bob": "hello bob, what a long and lovely day it is", "cat": "go away"}
SCORES = {"ann": 1.0, "bob": 2.5 / 3, "cat": 1 / 3}


def greeter(*, tools: list[Any] | None = None, model: str = "echo") -> Machine:
    rubric = define_rubric(
        {
            "greets": {"description": "Says hello.", "weight": 2},
            "brief": "At most 20 characters.",
            "warm": "Sounds friendly.",
        }
    )
    evaluator = define_evaluator(
        rubric,
        {
            "greets": check("says_hello", lambda run: "hello" in run.output.lower()),
            "brief": check("at_most_20", lambda run: 1.0 if len(run.output) <= 20 else 0.5),
            "warm": judge(),
        },
    )
    return define_machine(
        name="greet",
        intent="Greet people.",
        instructions="Say hello briefly.",
        model=model,
        rubric=rubric,
        evaluator=evaluator,
        tools=tools or [],
    )


def script(rules: list[dict[str, Any]]) -> ScriptedHarness:
    return ScriptedHarness(Script.model_validate({"rules": rules}))


def replies(first_turns: list[dict[str, Any]] | None = None, **usage: int) -> ScriptedHarness:
    """A script that answers each case of CASES with its reply (after ``first_turns``)."""
    return script(
        [
            {"match": name, "turns": [*(first_turns or []), {"text": text, "usage": usage}]}
            for name, text in REPLIES.items()
        ]
    )


def stored(root: Path) -> list[Run]:
    db = root / ".machine" / "store.db"
    if not db.exists():
        return []
    store = SQLiteStore(db)
    try:
        return list(store.iter_runs())
    finally:
        store.close()


async def test_per_case_means_and_passes(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=replies())
    report = await run_suite(ws, greeter(), CASES, trials=3, concurrency=2)
    by_id = {c.case_id: c for c in report.cases}
    assert [c.case_id for c in report.cases] == ["ann", "bob", "cat"]
    for case_id, score in SCORES.items():
        assert by_id[case_id].trials == 3
        assert by_id[case_id].scores == pytest.approx([score] * 3)
        assert by_id[case_id].mean == pytest.approx(score)
    # ann's 1.0 is on 3 of 4 weight: "warm", UNSCORED, could still fail it, so it is neither a pass nor a
    # fail; bob and cat fall short whatever warm scores
    assert [by_id[c].passes for c in ("ann", "bob", "cat")] == [0, 0, 0]
    assert [by_id[c].undecided for c in ("ann", "bob", "cat")] == [3, 0, 0]
    assert report.runs == 9
    assert report.mean == pytest.approx(sum(SCORES.values()) / 3)
    assert report.pass_rate == 0.0  # of the 6 decided runs
    assert report.undecided == 3
    assert report.errors == 0
    assert report.unscored == 9  # one UNSCORED judge grade per run
    assert report.unscored_runs == 0  # ... but every run has a score
    assert report.stopped is None


async def test_pass_score_decides_passes(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=replies())
    report = await run_suite(ws, greeter(), CASES, trials=2, pass_score=0.5)
    # at 0.5 ann (3 of 4) and bob (2.5 of 4) pass even with warm at 0; cat (1 of 4) reaches 0.5 only if
    # warm scores 1: undecided
    assert [c.passes for c in report.cases] == [2, 2, 0]
    assert [c.undecided for c in report.cases] == [0, 0, 2]
    assert report.pass_rate == pytest.approx(4 / 4)
    assert {r.scorecard.pass_score for r in stored(tmp_path) if r.scorecard} == {0.5}


async def test_every_run_is_stored_graded_with_its_case_and_trial(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=replies())
    seen: list[Run] = []
    report = await run_suite(ws, greeter(), CASES, trials=2, concurrency=3, on_run=seen.append)
    runs = stored(tmp_path)
    assert len(runs) == report.runs == len(seen) == 6
    assert sorted((r.case_id, r.trial) for r in runs) == sorted((c.id, t) for c in CASES for t in range(2))
    assert all(r.scorecard is not None for r in runs)
    assert {r.id for r in runs} == {r.id for r in seen}
    assert all(r.case == {"id": r.case_id, "input": f"greet {r.case_id}", "files": {}} for r in runs)


async def test_trials_are_interleaved_across_cases(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=replies())
    order: list[tuple[str | None, int | None]] = []
    await run_suite(
        ws, greeter(), CASES, trials=2, concurrency=1, on_run=lambda r: order.append((r.case_id, r.trial))
    )
    assert order == [("ann", 0), ("bob", 0), ("cat", 0), ("ann", 1), ("bob", 1), ("cat", 1)]


class InFlight:
    """Counts the runs inside the ``hold`` tool at once (they wait there, so the workers overlap)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.started: list[str] = []

    def machine(self) -> Machine:
        @tool
        async def hold(ctx: ToolContext, who: str) -> str:
            """Wait a moment, as a slow tool would."""
            self.started.append(who)
            self.now += 1
            self.most = max(self.most, self.now)
            try:
                await anyio.sleep(0.01)
            finally:
                self.now -= 1
            return "done"

        return greeter(tools=[hold])


def holding() -> ScriptedHarness:
    return script(
        [
            {
                "match": name,
                "turns": [{"tool_calls": [{"name": "hold", "arguments": {"who": name}}]}, {"text": text}],
            }
            for name, text in REPLIES.items()
        ]
    )


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_concurrency_bounds_the_runs_in_flight(tmp_path: Path, concurrency: int) -> None:
    flight = InFlight()
    ws = open_workspace(tmp_path, harness=holding())
    report = await run_suite(ws, flight.machine(), CASES, trials=3, concurrency=concurrency)
    assert report.runs == 9
    assert report.errors == 0
    assert 1 <= flight.most <= concurrency
    assert flight.most == concurrency  # the workers do overlap: the bound is reached, never passed
    assert flight.now == 0
    # Runs start in trial-major order whatever the concurrency: every case once before any twice.
    assert flight.started == ["ann", "bob", "cat"] * 3


async def test_concurrency_above_the_number_of_runs_is_fine(tmp_path: Path) -> None:
    flight = InFlight()
    ws = open_workspace(tmp_path, harness=holding())
    report = await run_suite(ws, flight.machine(), CASES[:2], trials=1, concurrency=50)
    assert report.runs == 2
    assert flight.most <= 2


async def test_unscored_runs_are_counted_and_kept_out_of_the_mean(tmp_path: Path) -> None:
    def fussy(run: Run, case: dict[str, Any]) -> bool:
        if case["id"] == "cat":
            raise RuntimeError("cannot tell")
        return "hello" in run.output

    rubric = define_rubric({"greets": "Says hello.", "warm": "Sounds friendly."})
    spec = define_machine(
        name="fussy",
        intent="Greet people.",
        instructions="Say hello.",
        model="echo",
        rubric=rubric,
        evaluator=define_evaluator(rubric, {"greets": check("fussy", fussy), "warm": judge()}),
    )
    ws = open_workspace(tmp_path, harness=replies())
    report = await run_suite(ws, spec, CASES, trials=2)
    cat = next(c for c in report.cases if c.case_id == "cat")
    assert cat.trials == 2
    assert cat.scores == []
    assert cat.mean is None
    assert cat.passes == 0
    assert cat.unscored == 2
    assert report.unscored_runs == 2
    assert report.unscored == 2 * 3 + 2  # the judge on every run, the check on cat's runs
    assert report.mean == pytest.approx(1.0)  # ann and bob say hello; cat's unscored runs are not zeros
    assert report.pass_rate is None  # ann and bob are undecided: warm, UNSCORED, could fail them
    assert report.undecided == 4
    assert report.errors == 0
    summary = report.model_dump(mode="json", by_alias=True)["summary"]
    assert summary["unscored"] == 8
    assert summary["unscored_runs"] == 2
    raising = fussy.__code__.co_firstlineno + 2  # the check's own line that raised, named for the person
    where = Path(__file__).resolve().relative_to(Path.cwd().resolve())
    assert report.criteria["greets"].raised == {f"RuntimeError at {where}:{raising}": 2}
    assert report.criteria["warm"].raised == {}  # a judge with no model is not a bug in a check


async def test_failed_runs_are_counted_apart_and_left_out_of_the_scores(tmp_path: Path) -> None:
    cases = [*CASES, Case(id="zed", input="greet zed")]  # no rule matches zed: HarnessError inside the run
    ws = open_workspace(tmp_path, harness=replies())
    report = await run_suite(ws, greeter(), cases, trials=2, concurrency=2)
    zed = next(c for c in report.cases if c.case_id == "zed")
    assert (zed.trials, zed.errors, zed.scores, zed.mean, zed.passes) == (2, 2, [], None, 0)
    assert report.errors == 2
    assert report.runs == 8
    assert report.mean == pytest.approx(sum(SCORES.values()) / 3)
    assert report.pass_rate == 0.0  # bob and cat fail; ann's two runs are undecided (warm UNSCORED)
    assert report.undecided == 2
    failed = [r for r in stored(tmp_path) if r.status == "error"]
    assert len(failed) == 2
    assert all(r.case_id == "zed" and r.error and "no rule" in r.error for r in failed)
    assert all(r.scorecard is None for r in failed)


async def test_spent_budget_stops_scheduling(tmp_path: Path) -> None:
    # $0.186 a run (100,000 input tokens at Qwen3.8-27B's price) against a budget of $0.0001.
    ws = open_workspace(tmp_path, harness=replies(input_tokens=100_000), budget=Budget(0.0001))
    report = await run_suite(ws, greeter(model="Qwen/Qwen3.8-27B"), CASES, trials=3, concurrency=2)
    assert report.stopped is not None and "budget" in report.stopped
    assert 1 <= report.runs < 9
    assert len(stored(tmp_path)) == report.runs
    assert report.cost_usd == pytest.approx(report.runs * 0.186)
    assert report.model_dump(mode="json", by_alias=True)["stopped"] == report.stopped


async def test_cost_is_what_this_suite_spent(tmp_path: Path) -> None:
    budget = Budget(None)
    ws = open_workspace(tmp_path, harness=replies(input_tokens=100_000), budget=budget)
    spec = greeter(model="Qwen/Qwen3.8-27B")
    await ws.run(spec, "greet ann")
    report = await run_suite(ws, spec, CASES, trials=1)
    assert report.stopped is None
    assert report.cost_usd == pytest.approx(3 * 0.186)
    assert budget.spent == pytest.approx(4 * 0.186)


async def test_report_json_shape(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=replies())
    data = (await run_suite(ws, greeter(), CASES, trials=2)).model_dump(mode="json", by_alias=True)
    assert data["machine"] == "greet"
    assert data["stopped"] is None
    assert [c["case_id"] for c in data["cases"]] == ["ann", "bob", "cat"]
    for case in data["cases"]:
        assert set(case) == {"case_id", "trials", "mean", "passes", "undecided", "scores", "runs"}
        assert case["trials"] == 2 and len(case["runs"]) == 2
        assert len(case["scores"]) == 2
    summary_keys = {"runs", "mean", "pass_rate", "undecided", "unscored", "errors", "cost_usd"}
    assert summary_keys <= set(data["summary"])
    assert data["summary"]["runs"] == 6
    assert data["summary"]["errors"] == 0
    assert data["summary"]["cost_usd"] == 0.0


async def test_empty_report_has_no_mean(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=EchoHarness(), budget=Budget(0.0))
    report = await run_suite(ws, greeter(), CASES, trials=2)
    assert report.runs == 0
    assert report.mean is None
    assert report.pass_rate is None
    assert report.stopped is not None
    assert stored(tmp_path) == []


@pytest.mark.parametrize(("trials", "concurrency"), [(0, 1), (1, 0)])
async def test_trials_and_concurrency_must_be_positive(tmp_path: Path, trials: int, concurrency: int) -> None:
    with pytest.raises(BadInputError, match="at least 1"):
        await run_suite(
            open_workspace(tmp_path, harness=EchoHarness()),
            greeter(),
            CASES,
            trials=trials,
            concurrency=concurrency,
        )
