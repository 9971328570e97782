"""Judges end to end: a run graded through the workspace's model access, over real HTTP to a local
server that speaks the chat-completions protocol (the same client code as against Tinker)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.openai_server import FakeOpenAI, status, text

from machine import (
    Budget,
    Workspace,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    judge,
    open_workspace,
)
from machine.clients.chat import ChatClient, ChatCompletionsHarness, Endpoint
from machine.runs import parse_effort

RUBRIC = define_rubric({"helpful": "Answers the question.", "short": "At most ten words."})
MACHINE = define_machine(
    name="helper",
    intent="Answer briefly.",
    instructions="Answer in a few words.",
    model="Qwen/Qwen3.8-27B",
    rubric=RUBRIC,
    evaluator=define_evaluator(
        RUBRIC, {"helpful": judge(), "short": check("words", lambda run: len(run.output.split()) <= 10)}
    ),
)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def workspace(tmp_path: Path, server: FakeOpenAI, budget: Budget) -> Workspace:
    endpoint = Endpoint("openai", server.url + "/v1", timeout_s=2.0, max_attempts=2, backoff_s=0.01)

    async def no_wait(seconds: float) -> None:
        return None

    harness = ChatCompletionsHarness(endpoint, client=ChatClient(endpoint, sleep=no_wait), stream=False)
    return open_workspace(
        tmp_path,
        harness=harness,
        budget=budget,
        judge_model="thinkingmachines/Inkling-Small",
        judge_effort="low",
    )


async def test_a_run_and_its_judge_both_go_to_the_endpoint_and_are_charged_apart(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    verdict = json.dumps({"criteria": {"helpful": {"reason": "it answers", "score": 1}}})
    server.push(
        text("Paris.", prompt_tokens=1000, completion_tokens=500),
        text(verdict, prompt_tokens=1000, completion_tokens=500),
    )
    budget = Budget(10)
    ws = workspace(tmp_path, server, budget)
    try:
        run = await ws.run(MACHINE, "Capital of France?", grade=True)
    finally:
        await ws.aclose()
    assert run.scorecard is not None
    helpful = run.scorecard.criteria["helpful"]
    assert (helpful.score, helpful.reason) == (1.0, "it answers")
    judged = server.requests[1].body
    assert judged["model"] == "thinkingmachines/Inkling-Small"
    assert judged["temperature"] == 0.0 and judged["seed"] == 0 and judged["reasoning_effort"] == "low"
    assert "Paris." in judged["messages"][1]["content"]
    run_cost = (1000 * 1.86 + 500 * 5.595) / 1e6  # Qwen3.8-27B's input and output prices
    judge_cost = (1000 * 1.16 + 500 * 2.88) / 1e6  # Inkling-Small's
    assert budget.spent_by_kind == {"runs": pytest.approx(run_cost), "grading": pytest.approx(judge_cost)}
    assert helpful.cost_usd == pytest.approx(judge_cost)


async def test_a_judge_model_that_does_not_exist_is_unscored_with_the_providers_message(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    server.push(text("Paris."), status(404, "The model `thinkingmachines/Inkling-Small` does not exist"))
    ws = workspace(tmp_path, server, Budget(1))
    try:
        run = await ws.run(MACHINE, "Capital of France?", grade=True)
    finally:
        await ws.aclose()
    assert run.status == "ok" and run.scorecard is not None
    helpful = run.scorecard.criteria["helpful"]
    assert helpful.score is None
    assert "404" in helpful.reason and "does not exist" in helpful.reason
    assert run.scorecard.criteria["short"].score == 1.0
    assert run.scorecard.score == 1.0  # the unscored judge is left out, not counted as 0


def test_workspace_call_closes_the_model_clients_inside_its_loop(tmp_path: Path, server: FakeOpenAI) -> None:
    server.push(text("Paris."))
    ws = workspace(tmp_path, server, Budget(1))
    run = ws.call(lambda: ws.run(MACHINE, "Capital of France?"))
    assert run.output == "Paris."
    assert ws.harness.client._client is None  # type: ignore[attr-defined]  # closed, reopened on next use
    server.push(text("Rome."))
    assert ws.call(lambda: ws.run(MACHINE, "Capital of Italy?")).output == "Rome."


def test_a_run_records_the_effort_it_asked_for(tmp_path: Path, server: FakeOpenAI) -> None:
    server.push(text("Paris."))
    ws = workspace(tmp_path, server, Budget(1))
    ws.effort = parse_effort("0.95")
    run = ws.call(lambda: ws.run(MACHINE, "Capital of France?"))
    assert run.effort == 0.95
    assert server.requests[0].body["reasoning_effort"] == "xhigh"
