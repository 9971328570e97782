"""What a model's turn may put into a run is bounded: a tool name that is too long or not the machine's,
calls past the turn's bound and arguments past theirs are refused (the model sees why) and kept cut; a
tool's result and a turn's text are cut; a long id is made short on both sides; a run that grows past
its bound stops; a host's trajectory is kept to the same bounds."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from machine import Budget, HarnessRequest, HarnessResult, Message, ToolCall, ToolContext, tool
from machine.clients.scripted import Script, ScriptedHarness
from machine.runs import (
    MAX_ARGUMENTS,
    MAX_CALLS_A_TURN,
    MAX_RESULT,
    MAX_TEXT,
    MAX_TOOL_NAME,
    bounded,
    checked_turn,
)
from machine.runs._calls import MAX_ID, kept_result, within_bounds

HUGE_NAME = "n" * 6_000_000


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def dump() -> str:
    """Return a megabyte."""
    return "x" * 1_000_000


async def play(turns: list[dict[str, Any]]) -> HarnessResult:
    script = Script.model_validate({"rules": [{"match": ".", "turns": turns}]})
    request = HarnessRequest(
        run_id="r1", machine="calc", instructions="Add.", input="go", model="scripted", tools=[add, dump],
        tool_context=ToolContext(run_id="r1"), budget=Budget(None),
    )  # fmt: skip
    return await ScriptedHarness(script).run(request)


def calls(*pairs: tuple[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in pairs]}


async def test_a_huge_or_unknown_tool_name_is_refused_and_kept_cut() -> None:
    result = await play([calls((HUGE_NAME, {}), ("paint", {})), {"text": "done"}])
    turn, refused, unknown = result.trajectory[1:4]
    assert (
        len(turn.tool_calls[0].name) < MAX_TOOL_NAME + 30
        and "(6,000,000 characters)" in turn.tool_calls[0].name
    )
    assert refused.is_error and refused.content.startswith("there is no tool named 'nnn")
    assert "the tools are: add, dump" in refused.content and len(refused.content) < 200
    assert unknown.is_error and "there is no tool named 'paint'" in unknown.content
    assert len(json.dumps([m.model_dump() for m in result.trajectory])) < 5_000


async def test_calls_past_the_turns_bound_are_refused() -> None:
    result = await play(
        [calls(*[("add", {"a": i, "b": 1}) for i in range(MAX_CALLS_A_TURN + 3)]), {"text": "ok"}]
    )
    results = [m for m in result.trajectory if m.role == "tool"]
    assert [m.content for m in results[:MAX_CALLS_A_TURN]] == [str(i + 1) for i in range(MAX_CALLS_A_TURN)]
    assert all(m.is_error and "at most 16 tool calls" in m.content for m in results[MAX_CALLS_A_TURN:])


async def test_arguments_past_their_bound_are_refused_and_kept_in_brief() -> None:
    big = {"a": 1, "b": 2, "note": "y" * (MAX_ARGUMENTS + 10)}
    result = await play([calls(("add", big)), {"text": "ok"}])
    call, answer = result.trajectory[1].tool_calls[0], result.trajectory[2]
    assert answer.is_error and f"over the {MAX_ARGUMENTS:,} a call may send" in answer.content
    assert call.arguments is None and call.raw_arguments is not None and len(call.raw_arguments) < 100


async def test_a_megabyte_result_and_a_megabyte_of_text_are_cut() -> None:
    result = await play([{"text": "t" * 1_000_000, **calls(("dump", {}))}, {"text": "ok"}])
    turn, answer = result.trajectory[1:3]
    assert len(answer.content) <= MAX_RESULT and answer.content.endswith(
        f"[cut: 1,000,000 characters, of which {MAX_RESULT - 80:,} are kept]"
    )
    assert len(turn.content) <= MAX_TEXT and "cut: 1,000,000 characters" in turn.content


async def test_a_run_that_grows_past_its_bound_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("machine.runs._loop.MAX_RUN_TEXT", 150_000)
    result = await play([calls(("dump", {}))] * 5 + [{"text": "never"}])
    assert result.stop_reason == "error" and "passed 150,000 characters" in (result.error or "")
    assert sum(m.role == "tool" for m in result.trajectory) == 3  # 3 x 64 KiB kept, then it stopped


def test_a_long_id_is_made_short_on_both_sides_and_a_hosts_trajectory_is_kept_in_bounds() -> None:
    long_id = "i" * 10_000
    turn = Message(role="assistant", tool_calls=[ToolCall(id=long_id, name="add", arguments={})])
    result = Message(role="tool", content="z" * 1_000_000, tool_call_id=long_id, name="add")
    kept_turn, refused = checked_turn(turn, {"add"})
    assert refused == {} and len(kept_turn.tool_calls[0].id) < 40
    host = bounded([Message(role="user", content="hi"), turn, result])
    assert host[1].tool_calls[0].id == host[2].tool_call_id == kept_turn.tool_calls[0].id
    assert len(host[2].content) < MAX_RESULT + 100
    plain = Message(
        role="assistant", content="fine", tool_calls=[ToolCall(id="c1", name="add", arguments={})]
    )
    assert checked_turn(plain, {"add"})[0] is plain  # nothing to keep in bounds: the same message


def test_a_hosts_trajectory_is_kept_as_checking_each_message_would_keep_it() -> None:
    """``bounded`` skips the messages ``within_bounds`` passes: for messages on either side of every
    bound it gives what checking each one gives, and a message within them back as it is."""
    rng = random.Random(11)

    def sized(bound: int) -> int:
        return rng.choice([0, 1, bound - 1, bound, bound + 1])

    def message() -> Message:
        role = rng.choice(["user", "assistant", "tool"])
        content = "c" * sized(MAX_RESULT if role == "tool" else MAX_TEXT)
        if role == "tool":
            return Message(
                role=role, content=content, tool_call_id="i" * sized(MAX_ID), name="n" * sized(MAX_TOOL_NAME)
            )
        if role == "user":
            return Message(role=role, content=content)
        made = [
            ToolCall(
                id="i" * sized(MAX_ID),
                name="n" * sized(MAX_TOOL_NAME),
                arguments={"a": "x" * sized(MAX_ARGUMENTS - 9)},
            )
            for _ in range(rng.choice([0, 1, MAX_CALLS_A_TURN, MAX_CALLS_A_TURN + 1]))
        ]
        return Message(role=role, content=content, reasoning="r" * sized(MAX_TEXT), tool_calls=made)

    for _ in range(300):
        said = [message() for _ in range(3)]
        checked = [
            checked_turn(m, {c.name for c in m.tool_calls})[0] if m.role == "assistant"
            else kept_result(m) if m.role == "tool" else m
            for m in said
        ]  # fmt: skip
        assert bounded(said) == checked
        for m in said:
            if within_bounds(m):
                assert bounded([m])[0] is m
