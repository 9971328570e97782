"""The request on the wire: each message encoded once and the request joined from those bytes, yet the
bytes are exactly ``json.dumps`` of the whole request, and the budget's bound is the same number."""

from __future__ import annotations

import gc
import json
from typing import Any

import anyio
import pytest
from helpers.openai_server import FakeOpenAI, text, tool_call

from machine import Budget, HarnessRequest, Message, ToolCall, ToolContext, tool
from machine.clients._wire import MessageCodec, Prompt, prompt_bound, tools_json
from machine.clients.chat import ChatClient, ChatCompletionsHarness, Endpoint
from machine.runs import openai_tools, parse_effort, to_openai

LIMIT_S = 10.0
INSTRUCTIONS = "You add numbers with the add tool. Ünïcode stays escaped: 日本."


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def conversation() -> list[Message]:
    call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
    return [
        Message(role="user", content='add 2 and 3, "quoted" and\nnewlined ✓'),
        Message(role="assistant", content="", reasoning="I should add.", tool_calls=[call]),
        Message(role="tool", content="5", tool_call_id="c1", name="add"),
        Message(role="assistant", content="It is 5."),
    ]


def request(history: list[Message] | None = None, **kw: Any) -> HarnessRequest:
    return HarnessRequest(
        run_id="r1",
        machine="calc",
        instructions=INSTRUCTIONS,
        input="add 2 and 3",
        model="fake-model",
        tools=[add],
        tool_context=ToolContext(run_id="r1"),
        budget=Budget(None),
        history=history or [],
        **kw,
    )


@pytest.mark.parametrize("send_reasoning", [False, True])
def test_the_prompt_is_the_json_of_the_whole_conversation(send_reasoning: bool) -> None:
    codec = MessageCodec(send_reasoning=send_reasoning)
    messages = conversation()
    tools = openai_tools([add])
    prompt = codec.prompt(INSTRUCTIONS, messages, tools_json(tools))
    wire = to_openai(INSTRUCTIONS, messages, send_reasoning=send_reasoning)
    options = {"max_tokens": 100, "reasoning_effort": "high", "stream": True, "stream_options": {"a": 1}}
    expected = {"model": "m/ö", "messages": wire, "tools": tools, **options}
    assert prompt.body("m/ö", options) == json.dumps(expected).encode()
    assert prompt.bound() == prompt_bound({"messages": wire, "tools": tools})
    bare = Prompt.of(wire)
    assert bare.body("m", {}) == json.dumps({"model": "m", "messages": wire}).encode()
    assert bare.bound() == prompt_bound({"messages": wire})
    assert Prompt.of([]).bound() == prompt_bound({"messages": []})


def test_each_message_is_encoded_once_however_often_it_is_sent() -> None:
    codec = MessageCodec(send_reasoning=False)
    messages = conversation()
    for end in range(1, len(messages) + 1):
        codec.prompt(INSTRUCTIONS, messages[:end])
        assert codec.encoded == end
    for _ in range(3):
        codec.prompt("Other instructions.", messages)
    assert codec.encoded == len(messages)


def test_a_message_changed_since_it_was_encoded_is_encoded_again() -> None:
    codec = MessageCodec(send_reasoning=True)
    messages = conversation()
    codec.prompt("", messages)
    messages[3].content = "It is five."
    messages[1].tool_calls.append(ToolCall(id="c2", name="add", arguments={"a": 1, "b": 1}))
    prompt = codec.prompt("", messages)
    assert codec.encoded == len(messages) + 2
    wire = to_openai("", messages, send_reasoning=True)
    assert prompt.body("m", {}) == json.dumps({"model": "m", "messages": wire}).encode()


def test_the_codec_forgets_messages_that_are_gone() -> None:
    codec = MessageCodec(send_reasoning=False)
    messages = conversation()
    codec.prompt("", messages)
    assert len(codec) == len(messages)
    del messages
    gc.collect()
    assert len(codec) == 0


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_the_bytes_sent_are_json_dumps_of_the_request(server: FakeOpenAI, stream: bool) -> None:
    server.push(tool_call("add", {"a": 2, "b": 3}, id="c9"), text("5"))
    endpoint = Endpoint("openai", server.url + "/v1", timeout_s=2.0, max_attempts=1, max_tokens=321)
    harness = ChatCompletionsHarness(endpoint, client=ChatClient(endpoint))
    history = conversation()
    events: list[Any] = []
    try:
        with anyio.fail_after(LIMIT_S):
            result = await harness.run(
                request(history, effort=parse_effort("high"), on_event=events.append if stream else None)
            )
    finally:
        await harness.aclose()
    assert result.output == "5"
    sent = [*history, *result.trajectory[:3]]
    for seen, count in zip(server.requests, (len(history) + 1, len(sent)), strict=True):
        expected: dict[str, Any] = {
            "model": "fake-model",
            "messages": to_openai(INSTRUCTIONS, sent[:count], send_reasoning=False),
            "tools": openai_tools([add]),
            "max_tokens": 321,
            "reasoning_effort": "high",
        }
        if stream:
            expected.update(stream=True, stream_options={"include_usage": True})
        assert seen.raw == json.dumps(expected).encode()
    assert harness.codec.encoded == len(sent)  # the history, the input, the tool call and its result


async def test_runs_on_the_same_history_encode_only_what_is_new(server: FakeOpenAI) -> None:
    server.default = text("ok")
    endpoint = Endpoint("openai", server.url + "/v1", timeout_s=2.0, max_attempts=1)
    harness = ChatCompletionsHarness(endpoint, stream=False)
    history = conversation()
    try:
        with anyio.fail_after(LIMIT_S):
            for _ in range(3):
                await harness.run(request(history))
    finally:
        await harness.aclose()
    assert harness.codec.encoded == len(history) + 3  # each run's own input is a new message
    assert len({seen.raw for seen in server.requests}) == 1  # the same input: the same bytes
