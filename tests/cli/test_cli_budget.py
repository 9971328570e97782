"""The real ``machine`` command under a hard budget, against a local OpenAI-compatible endpoint that
reports the usage a test chooses: the most a call may use, or usage that cannot be right."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from helpers.openai_server import FakeOpenAI, Recorded, Reply, text

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

MAX_TOKENS = 2000
PROMPT_TOKENS = 1000
ONE_CALL = (PROMPT_TOKENS * 1.86 + MAX_TOKENS * 5.595) / 1e6  # at greet's model, Qwen3.8-27B


def spent(stderr: str) -> float:
    found = re.search(r"spent \$(-?[0-9.]+)", stderr)
    assert found, stderr
    return float(found.group(1))


def most_a_call_may_use(request: Recorded) -> Reply:
    """Every reply uses all the output tokens the request allowed: each call costs the most it can."""
    allowed = int((request.body or {}).get("max_tokens") or MAX_TOKENS)
    return text("hello there", prompt_tokens=PROMPT_TOKENS, completion_tokens=allowed)


def suite(ws: WorkspaceFolder, server: FakeOpenAI, *args: str) -> list[str]:
    return [
        "suite", "greet", *args, "--harness", "openai", "--base-url", server.url + "/v1",
        "--workspace", str(ws.root),
    ]  # fmt: skip


def test_a_tiny_budget_at_concurrency_8_spends_at_most_one_call_past_the_cap(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    with FakeOpenAI(responder=most_a_call_may_use, latency_ms=50) as server:
        args = suite(ws, server, "--trials", "8", "--concurrency", "8", "--budget", "0.001")
        result = machine_cmd(*args, env={"MACHINE_MAX_TOKENS": str(MAX_TOKENS)})
    assert result.returncode == 0, result.stderr
    answered = [r for r in server.requests if r.played == "reply"]
    assert 1 <= len(answered) <= 8  # at most the calls already sent when the cap was reached
    assert spent(result.stderr) <= 0.001 + ONE_CALL  # here: the one call that crossed the cap
    assert len(answered) == 1
    assert all(r.body["max_tokens"] == MAX_TOKENS for r in answered)  # the request bounds its cost
    assert "budget" in result.stdout.lower() or "budget" in result.stderr.lower()


def hostile(usage: dict[str, Any]) -> Any:
    def reply(request: Recorded) -> Reply:
        return Reply(content="hello", raw_usage=usage)

    return reply


def test_usage_that_cannot_be_right_fails_the_runs_and_is_charged_never_subtracted(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    negative = {"prompt_tokens": 10, "completion_tokens": -4_000_000_000, "total_tokens": 0}
    for usage in (negative, {"prompt_tokens": float("nan"), "completion_tokens": 5}):
        with FakeOpenAI(responder=hostile(usage)) as server:
            args = suite(ws, server, "--budget", "1", "--json")
            result = machine_cmd(*args, env={"MACHINE_MAX_TOKENS": str(MAX_TOKENS)})
        assert result.returncode == 0, result.stderr
        charged = spent(result.stderr)
        assert 0 < charged <= 1 + ONE_CALL * 10  # each failed call paid at its reservation, nothing taken off
        assert '"errors": 3' in result.stdout  # every run failed, none was graded on a lie
        assert len(server.requests) == 3  # a failed call is not retried
