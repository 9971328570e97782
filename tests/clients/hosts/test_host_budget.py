"""The opencode and pi harnesses under a hard budget, with the real binaries against a local
OpenAI-compatible server: every call the host makes goes through the model proxy, which reserves its
bound before sending it, refuses it once the budget is spent, and charges the usage the reply reports,
once. Only loopback traffic; every run and suite is bounded by ``anyio.fail_after``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.hosts import host_binary
from helpers.openai_server import FakeOpenAI, Recorded, Reply, text, tool_call

from machine import (
    Budget,
    Case,
    Usage,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    open_workspace,
    run_suite,
    tool,
)
from machine.budget import price_of
from machine.clients._wire import prompt_bound
from machine.runs import Harness

pytestmark = [pytest.mark.slow, pytest.mark.server]  # opencode and pi, from npm

MODEL = "Qwen/Qwen3.8-27B"  # $1.86 input, $5.595 output per million tokens
LIMIT_S = 120.0
CONCURRENCY = 4
SCRUBBED = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "TINKER_API_KEY", "MACHINE_PI", "MACHINE_OPENCODE")


@tool
def note(text: str) -> str:
    """Note something down."""
    return f"noted {text}"


rubric = define_rubric({"ran": {"description": "The run finished.", "weight": 1}})
SPENDER = define_machine(
    name="spender",
    intent="Note things.",
    instructions="Note things with the note tool.",
    model=MODEL,
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"ran": check("ran", lambda run: (True, "ran"))}),
    tools=[note],
    max_steps=3,
)


@pytest.fixture(autouse=True)
def scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MACHINE_MODEL_TIMEOUT", "30")


@pytest.fixture(params=["opencode", "pi"])
def host(request: pytest.FixtureRequest) -> str:
    host_binary(str(request.param))  # skipped (failed on CI) when the host is not installed
    return str(request.param)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def harness(host: str, fake: FakeOpenAI) -> AsyncIterator[Harness]:
    made: Any
    if host == "opencode":
        from machine.clients.hosts.opencode import OpencodeHarness

        made = OpencodeHarness(binary=host_binary("opencode"), base_url=fake.url + "/v1")
    else:
        from machine.clients.hosts.pi import PiHarness

        made = PiHarness(binary=host_binary("pi"), base_url=fake.url + "/v1", max_retries=0)
    try:
        yield made
    finally:
        await made.aclose()


def tool_name(host: str) -> str:
    return "machine_note" if host == "opencode" else "note"


def cost(usage: Usage) -> float:
    price = price_of(MODEL)
    assert price is not None
    return price.cost(usage)


def reservation(body: dict[str, Any]) -> float:
    """The most the proxy let a forwarded call cost: its prompt bound and its ``max_tokens``."""
    allowed = int(body.get("max_tokens") or 16_384)
    return cost(Usage(input_tokens=prompt_bound(body), output_tokens=allowed))


async def test_a_suite_at_concurrency_4_overshoots_a_tiny_budget_by_at_most_a_call_a_run_in_flight(
    host: str, fake: FakeOpenAI, harness: Harness, tmp_path: Path
) -> None:
    def most(request: Recorded) -> Reply:
        """Every call uses all it may: the output it was allowed, and a large prompt."""
        allowed = int((request.body or {}).get("max_tokens") or 100_000)
        return tool_call(tool_name(host), {"text": "x"}, prompt_tokens=4096, completion_tokens=allowed)

    fake.responder = most
    cap = 0.001
    budget = Budget(cap)
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    cases = [Case(id=f"c{i}", input=f"note {i}") for i in range(8)]
    with anyio.fail_after(LIMIT_S * 2):
        await run_suite(ws, SPENDER, cases, concurrency=CONCURRENCY)
    sent = [r.body for r in fake.requests if r.played == "reply"]
    assert sent, "no call reached the endpoint"
    one_call = max(reservation(body) for body in sent)
    assert cap < budget.spent <= cap + CONCURRENCY * one_call, f"spent {budget.spent / one_call:.1f} calls"
    assert all(body["max_tokens"] <= 16_384 for body in sent)  # the proxy clamped opencode's 32000
    assert budget.reserved == 0.0 and budget.in_flight == 0


async def test_a_call_refused_by_a_spent_budget_stops_the_run_saying_so(
    host: str, fake: FakeOpenAI, harness: Harness, tmp_path: Path
) -> None:
    fake.push(tool_call(tool_name(host), {"text": "x"}, prompt_tokens=4096, completion_tokens=16_384))
    budget = Budget(cost(Usage(input_tokens=4096, output_tokens=16_384)))  # the first step spends it all
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(SPENDER, "note x")
    assert len([r for r in fake.requests if r.played == "reply"]) == 1  # the second step was not sent
    assert run.status == "error" and run.stop_reason == "budget", run.error
    assert "is spent" in (run.error or "")
    assert run.cost_usd == pytest.approx(budget.spent)


async def test_usage_that_cannot_be_right_fails_the_call_and_spends_nothing_negative(
    host: str, fake: FakeOpenAI, harness: Harness, tmp_path: Path
) -> None:
    fake.push(Reply(content="hi", raw_usage={"prompt_tokens": 30, "completion_tokens": -4_000_000_000}))
    budget = Budget(1)
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(SPENDER, "note x")
    sent = [r.body for r in fake.requests if r.played == "reply"]
    assert run.status == "error" and "cannot be right" in (run.error or ""), run.error
    assert len(sent) == 1
    assert budget.spent == pytest.approx(reservation(sent[0]))  # charged at the most it could cost
    assert run.cost_usd == pytest.approx(budget.spent) and budget.spent > 0
    assert budget.reserved == 0.0


async def test_the_spend_is_what_the_endpoint_reported_charged_once(
    host: str, fake: FakeOpenAI, harness: Harness, tmp_path: Path
) -> None:
    fake.push(
        tool_call(
            tool_name(host), {"text": "x"}, prompt_tokens=1200, cached_tokens=200, completion_tokens=30
        ),
        text("Noted.", prompt_tokens=1300, completion_tokens=12),
    )
    budget = Budget(1)
    ws = open_workspace(tmp_path, harness=harness, budget=budget)
    with anyio.fail_after(LIMIT_S):
        run = await ws.run(SPENDER, "note x")
    assert run.status == "ok", run.error
    expected = cost(Usage(input_tokens=1200, cached_input_tokens=200, output_tokens=30))
    expected += cost(Usage(input_tokens=1300, output_tokens=12))
    assert budget.spent == pytest.approx(expected)
    assert run.cost_usd == pytest.approx(expected)
    assert run.usage == Usage(input_tokens=2500, cached_input_tokens=200, output_tokens=42)
    assert all(
        "stream_options" not in r.body or r.body["stream_options"]["include_usage"] for r in fake.requests
    )
