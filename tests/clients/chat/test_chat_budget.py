"""The chat-completions harness and its judges under a hard budget, against a local OpenAI-compatible
server: every call is bounded by ``max_tokens`` and reserved before it is sent, and usage the endpoint
reports is checked before it is believed."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from helpers.openai_server import FakeOpenAI, Reply, text, tool_call

from machine import Budget, define_evaluator, define_machine, define_rubric, judge, open_workspace, tool
from machine.clients.chat import ChatClient, ChatCompletionsHarness, Endpoint
from machine.workspace import Workspace

LIMIT = 20
MAX_TOKENS = 500
MODEL = "Qwen/Qwen3.8-27B"  # $1.86 input, $5.595 output per million tokens


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


rubric = define_rubric({"right": {"description": "The sum is right.", "weight": 1}})
MACHINE = define_machine(
    name="adder",
    intent="Add numbers.",
    instructions="Add with the add tool.",
    model=MODEL,
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"right": judge(model="thinkingmachines/Inkling-Small")}),
    tools=[add],
    max_steps=5,
)


def workspace(tmp_path: Path, server: FakeOpenAI, budget: Budget) -> Workspace:
    endpoint = Endpoint("openai", server.url + "/v1", timeout_s=5.0, max_attempts=2, max_tokens=MAX_TOKENS)
    harness = ChatCompletionsHarness(endpoint, client=ChatClient(endpoint), stream=False)
    return open_workspace(tmp_path, harness=harness, budget=budget)


async def test_every_call_says_how_many_tokens_it_may_use(tmp_path: Path, server: FakeOpenAI) -> None:
    server.push(tool_call("add", {"a": 1, "b": 2}), text("3"))
    ws = workspace(tmp_path, server, Budget(1))
    with anyio.fail_after(LIMIT):
        run = await ws.run(MACHINE, "1 + 2?")
    await ws.aclose()
    assert run.status == "ok"
    assert [r.body["max_tokens"] for r in server.requests] == [MAX_TOKENS, MAX_TOKENS]


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 30, "completion_tokens": -4_000_000_000},
        {"prompt_tokens": float("nan"), "completion_tokens": 5},
        {"prompt_tokens": "30", "completion_tokens": 5},
        {"prompt_tokens": 30, "completion_tokens": MAX_TOKENS + 1},
        {"prompt_tokens": 10**12, "completion_tokens": 5},
        {"prompt_tokens": 30, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 31}},
    ],
)
async def test_usage_that_cannot_be_right_fails_the_run_charged_at_its_reservation(
    tmp_path: Path, server: FakeOpenAI, usage: dict[str, object]
) -> None:
    server.push(tool_call("add", {"a": 1, "b": 2}, prompt_tokens=100, completion_tokens=20))
    server.push(Reply(content="3", raw_usage=usage))
    budget = Budget(1)
    ws = workspace(tmp_path, server, budget)
    with anyio.fail_after(LIMIT):
        run = await ws.run(MACHINE, "1 + 2?", grade=True)
    await ws.aclose()
    first = (100 * 1.86 + 20 * 5.595) / 1e6
    assert run.status == "error"
    assert "cannot be right" in (run.error or "") or "not a number of tokens" in (run.error or "")
    assert run.scorecard is None  # a run that failed is not graded
    assert len(server.requests) == 2  # not retried
    assert budget.spent > first + MAX_TOKENS * 5.595 / 1e6  # the second call paid at the most it could cost
    assert run.cost_usd == pytest.approx(budget.spent)  # the run's own record says so too
    assert budget.reserved == 0.0


async def test_a_judge_reporting_impossible_usage_leaves_the_criterion_unscored_and_pays(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    verdict = json.dumps({"criteria": {"right": {"reason": "it is", "score": 1}}})
    server.push(text("3", prompt_tokens=50, completion_tokens=5))
    server.push(Reply(content=verdict, raw_usage={"prompt_tokens": -(10**9), "completion_tokens": 1}))
    budget = Budget(1)
    ws = workspace(tmp_path, server, budget)
    with anyio.fail_after(LIMIT):
        run = await ws.run(MACHINE, "1 + 2?", grade=True)
    await ws.aclose()
    assert run.scorecard is not None
    right = run.scorecard.criteria["right"]
    assert right.score is None and "cannot be right" in right.reason
    assert budget.spent_by_kind["grading"] > 0
    assert right.cost_usd == pytest.approx(budget.spent_by_kind["grading"])
    assert budget.spent_by_kind["grading"] >= MAX_TOKENS * 2.88 / 1e6  # Inkling-Small, at its reservation


async def test_a_run_the_budget_stops_between_steps_keeps_what_it_did(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    cost_of_one = (400 * 1.86 + MAX_TOKENS * 5.595) / 1e6
    server.push(tool_call("add", {"a": 1, "b": 2}, prompt_tokens=400, completion_tokens=MAX_TOKENS))
    server.push(text("3"))
    budget = Budget(cost_of_one)  # the first step spends it all
    ws = workspace(tmp_path, server, budget)
    with anyio.fail_after(LIMIT):
        run = await ws.run(MACHINE, "1 + 2?")
    await ws.aclose()
    assert len(server.requests) == 1  # the second step was not sent
    assert run.status == "error" and run.stop_reason == "budget" and "is spent" in (run.error or "")
    assert [m.role for m in run.trajectory] == ["user", "assistant", "tool"]
    assert run.cost_usd == pytest.approx(cost_of_one)
    assert budget.spent == pytest.approx(cost_of_one)
