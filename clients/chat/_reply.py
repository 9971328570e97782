"""A chat-completions reply, as JSON parsed to plain dicts, made into our ``Turn``: a whole completion, or
a stream's chunks put back together.

A reply of the wrong shape raises ValueError (the call cannot be read, and is not asked again); one that
is an error object raises ReplyError (the provider failed, and the call is retried).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from machine.runs import Message, ToolCall, Turn

from .._wire import ReplyError, provider_field, tool_arguments, usage_of

REASONING = ("reasoning_content", "reasoning")
"""Where providers put a reply's reasoning: Tinker, vLLM and DeepSeek, then OpenRouter."""


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object: {json.dumps(value)[:80]}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is not a JSON list: {json.dumps(value)[:80]}")
    return value


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} is not text: {json.dumps(value)[:80]}")
    return value


def _arguments(value: Any) -> str | None:
    """Tool-call arguments as the model wrote them (a provider that sends an object gets it as JSON)."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


_scan: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def loads(data: bytes) -> Any:
    """``json.loads`` of one event's data without its preamble per call, which a stream pays per chunk;
    anything unusual (whitespace around, an error) goes to ``json.loads`` itself for its answer."""
    text = data.decode()
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def completion_turn(data: Any) -> Turn:
    """The turn in a whole (not streamed) completion."""
    reply = _object(data, "the reply")
    choices = _list(reply.get("choices"), "the reply's choices")
    if not choices:
        if reply.get("error"):  # a 200 that carries an error object (OpenRouter, when the upstream fails)
            raise ReplyError(reply["error"])
        raise ValueError("the reply has no choices")
    message = _object(_object(choices[0], "the reply's choice").get("message"), "the reply's message")
    calls = []
    for index, raw in enumerate(_list(message.get("tool_calls"), "the reply's tool_calls")):
        call = _object(raw, "a tool call")
        function = _object(call.get("function"), "a tool call's function")
        arguments = _arguments(function.get("arguments"))
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{index}",
                name=_text(function.get("name"), "a tool call's name"),
                arguments=tool_arguments(arguments),
                raw_arguments=arguments,
            )
        )
    return Turn(
        Message(
            role="assistant",
            content=_text(message.get("content"), "the reply's content"),
            reasoning=provider_field(message, *REASONING),
            tool_calls=calls,
        ),
        usage_of(reply.get("usage")),
    )


class StreamedTurn:
    """A streamed reply put back together chunk by chunk; the text goes to ``on_text`` as it comes."""

    __slots__ = ("calls", "chosen", "on_text", "reasoning", "text", "usage")

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: Any = None
        self.chosen = False

    def add(self, data: Any) -> None:
        """One chunk (an event's JSON)."""
        chunk = _object(data, "a chunk of the streamed reply")
        if chunk.get("error"):  # the provider failed after the stream began
            raise ReplyError(chunk["error"])
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not choices:
            return
        self.chosen = True
        for choice in choices if type(choices) is list else _list(choices, "a chunk's choices"):
            delta = choice.get("delta") if type(choice) is dict else _object(choice, "a chunk's choice")
            if type(delta) is not dict:
                delta = _object(delta or {}, "a chunk's delta")
            content = delta.get("content")
            if content:
                self.text.append(content if type(content) is str else _text(content, "a chunk's content"))
                self.on_text(content)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reasoning.append(_text(reasoning, "a chunk's reasoning"))
            if delta.get("tool_calls"):
                self._calls(delta["tool_calls"])

    def _calls(self, calls: Any) -> None:
        for position, raw in enumerate(_list(calls, "a chunk's tool_calls")):
            call = _object(raw, "a tool call")
            index = call.get("index")
            slot = self.calls.setdefault(
                index if isinstance(index, int) else position, {"id": "", "name": "", "arguments": ""}
            )
            slot["id"] = call.get("id") or slot["id"]
            function = call.get("function")
            if function is not None:
                function = _object(function, "a tool call's function")
                slot["name"] += _text(function.get("name"), "a tool call's name")
                slot["arguments"] += _arguments(function.get("arguments")) or ""

    def turn(self) -> Turn:
        if not self.chosen:
            raise ValueError("the streamed reply has no choices")
        calls = [
            ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments=tool_arguments(slot["arguments"]),
                raw_arguments=slot["arguments"],
            )
            for index, slot in sorted(self.calls.items())
        ]
        return Turn(
            Message(
                role="assistant",
                content="".join(self.text),
                reasoning="".join(self.reasoning) or None,
                tool_calls=calls,
            ),
            usage_of(self.usage),
        )
