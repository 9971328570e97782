from typing import Any

from machine import Budget, Event, HarnessRequest, HarnessResult, Message, ToolContext, tool
from machine.clients.scripted import Script, ScriptedHarness
from machine.runs import Turn, run_loop


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


def request(events: list[Event] | None = None, **kw: Any) -> HarnessRequest:
    args: dict[str, Any] = {
        "run_id": "r1",
        "machine": "calc",
        "instructions": "Add.",
        "input": "add 2 and 3",
        "model": "scripted",
        "tools": [add, explode],
        "tool_context": ToolContext(run_id="r1"),
        "budget": Budget(None),
        "on_event": events.append if events is not None else None,
    }
    args.update(kw)
    return HarnessRequest(**args)


async def play(turns: list[dict[str, Any]], **kw: Any) -> HarnessResult:
    script = Script.model_validate({"rules": [{"match": ".", "turns": turns}]})
    return await ScriptedHarness(script).run(request(**kw))


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_tool_result_is_recorded_and_loop_ends_on_text() -> None:
    result = await play([call("add", {"a": 2, "b": 3}), {"text": "5"}])
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant"]
    tool_msg = result.trajectory[2]
    assert (tool_msg.content, tool_msg.is_error, tool_msg.name) == ("5", False, "add")
    assert tool_msg.tool_call_id == result.trajectory[1].tool_calls[0].id
    assert result.output == "5"
    assert result.stop_reason == "end_turn"


async def test_tool_results_are_fed_back_to_the_model() -> None:
    seen: list[list[Message]] = []

    async def next_turn(messages: list[Message], step: int) -> Turn:
        seen.append(messages)
        if step == 0:
            return Turn(
                Message.model_validate(
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 1}}],
                    }
                )
            )
        return Turn(Message(role="assistant", content="done"))

    history = [Message(role="user", content="earlier"), Message(role="assistant", content="ok")]
    result = await run_loop(request(history=history), next_turn)
    assert [m.content for m in seen[0]] == ["earlier", "ok", "add 2 and 3"]
    assert seen[1][-1].role == "tool"
    assert seen[1][-1].content == "2"
    assert result.trajectory[0].content == "add 2 and 3"  # history is not part of this run's trajectory


async def test_max_steps_stops_the_loop() -> None:
    result = await play([call("add", {"a": 1, "b": 1})] * 5, max_steps=2)
    assert result.stop_reason == "max_steps"
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "assistant", "tool"]


async def test_unknown_tool_is_an_error_result_and_loop_continues() -> None:
    result = await play([call("multiply", {"a": 2}), {"text": "sorry"}])
    error = result.trajectory[2]
    assert error.is_error
    assert "no tool named 'multiply'" in error.content
    assert "add, explode" in error.content
    assert result.output == "sorry"
    assert result.stop_reason == "end_turn"


async def test_raising_tool_is_an_error_result_not_a_crash() -> None:
    result = await play([call("explode", {}), {"text": "it failed"}])
    error = result.trajectory[2]
    assert error.is_error
    assert error.content == "explode failed: RuntimeError: disk on fire"
    assert result.output == "it failed"


async def test_invalid_json_arguments_are_an_error_result() -> None:
    result = await play([call("add", "{not json"), {"text": "oops"}])
    sent = result.trajectory[1].tool_calls[0]
    assert sent.arguments is None
    assert sent.raw_arguments == "{not json"
    error = result.trajectory[2]
    assert error.is_error
    assert "not valid JSON" in error.content


async def test_json_string_arguments_are_parsed() -> None:
    result = await play([call("add", '{"a": 4, "b": 5}'), {"text": "9"}])
    assert result.trajectory[2].content == "9"
    assert not result.trajectory[2].is_error


async def test_invalid_arguments_reach_the_model_naming_field() -> None:
    result = await play([call("add", {"a": 1}), {"text": "retry"}])
    assert result.trajectory[2].is_error
    assert "b: Field required" in result.trajectory[2].content


async def test_trajectory_records_every_call_and_reasoning() -> None:
    two_calls = {
        "reasoning": "both at once",
        "tool_calls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"name": "add", "arguments": {"a": 3, "b": 4}},
        ],
    }
    result = await play([two_calls, {"text": "3 and 7"}])
    assert [m.role for m in result.trajectory] == ["user", "assistant", "tool", "tool", "assistant"]
    assert result.trajectory[1].reasoning == "both at once"
    assert [m.content for m in result.trajectory[2:4]] == ["3", "7"]
    ids = [c.id for c in result.trajectory[1].tool_calls]
    assert [m.tool_call_id for m in result.trajectory[2:4]] == ids
    assert len(set(ids)) == 2


async def test_events_emitted_in_order() -> None:
    events: list[Event] = []
    await play([call("add", {"a": 2, "b": 3}), {"text": "5"}], events=events)
    assert [e.type for e in events] == ["assistant", "tool_call", "tool_result", "assistant"]
    assert {e.run_id for e in events} == {"r1"}
    assert events[1].message.tool_calls[0].name == "add"
    assert events[2].message.content == "5"
    assert events[3].message.content == "5"


async def test_usage_is_summed_over_turns() -> None:
    usage = {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2}
    result = await play([{**call("add", {"a": 1, "b": 1}), "usage": usage}, {"text": "2", "usage": usage}])
    assert (result.usage.input_tokens, result.usage.cached_input_tokens, result.usage.output_tokens) == (
        20,
        8,
        4,
    )
    assert result.cost_usd == 0.0
