"""The chat-completions wire format: our messages as the endpoint reads them, and what its replies carry.

Kept apart from the client so the format can be read and tested without a connection.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from machine.errors import UsageRefused
from machine.runs import Message, Usage, to_openai

__all__ = ["MessageCodec", "Prompt", "to_openai"]  # to_openai: for the harnesses that import it from here


def tool_arguments(raw: str | None) -> dict[str, Any] | None:
    """Parsed tool-call arguments, or None when the model's JSON does not parse to an object."""
    if raw is None or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def provider_field(obj: Mapping[str, Any], *names: str) -> Any:
    """A provider field outside the standard reply (``reasoning_content``, ``reasoning``)."""
    for name in names:
        value = obj.get(name)
        if value:
            return value
    return None


def usage_of(raw: Any) -> Usage:
    """A reply's token counts in ours (cached prompt tokens among the input). The counts are the
    endpoint's word: one that is not a whole number (NaN, a string, a bool, 1.5) is refused here, and the
    budget refuses negative or impossible ones."""
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("prompt_tokens_details")
    return Usage(
        input_tokens=_count(raw, "prompt_tokens"),
        cached_input_tokens=_count(details if isinstance(details, dict) else {}, "cached_tokens"),
        output_tokens=_count(raw, "completion_tokens"),
    )


def _count(raw: Mapping[str, Any], name: str) -> int:
    value = raw.get(name)
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageRefused(f"the endpoint reported {name}={value!r}, which is not a number of tokens")
    return value


PROMPT_OVERHEAD_TOKENS = 4096
"""Prompt tokens a request may use beyond its text: the chat template, tool instructions, a provider's
preamble."""
PER_MESSAGE_TOKENS = 16
"""The chat template's markers around each message."""


def prompt_bound(body: dict[str, Any]) -> int:
    """The most prompt tokens ``body`` (messages and tools) can be: a token is at least one byte of its
    text (byte-level tokenizers), and its JSON is longer than the text; the template's markers apart."""
    size = len(json.dumps(body))  # ASCII: every other character takes 6 bytes here, at most 4 in UTF-8
    return size + PER_MESSAGE_TOKENS * len(body.get("messages", [])) + PROMPT_OVERHEAD_TOKENS


class Prompt:
    """A request's messages and tools already in JSON, each message encoded on its own: the request is
    joined from these bytes, and the next step of a run reuses them for the messages it shares."""

    __slots__ = ("messages", "tools")

    def __init__(self, messages: Sequence[bytes], tools: bytes | None = None) -> None:
        self.messages = messages
        self.tools = tools

    @classmethod
    def of(cls, messages: Iterable[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Prompt:
        return cls([json.dumps(m).encode() for m in messages], tools_json(tools))

    def bound(self) -> int:
        """``prompt_bound`` of the same messages and tools, from the lengths of their JSON."""
        count = len(self.messages)
        size = len(b'{"messages": []}') + sum(map(len, self.messages)) + 2 * max(count - 1, 0)
        if self.tools is not None:
            size += len(b', "tools": ') + len(self.tools)
        return size + PER_MESSAGE_TOKENS * count + PROMPT_OVERHEAD_TOKENS

    def body(self, model: str, options: dict[str, Any]) -> bytes:
        """The request as ``json.dumps`` writes ``{"model", "messages", "tools", **options}``."""
        parts = [
            b'{"model": ',
            json.dumps(model).encode(),
            b', "messages": [',
            b", ".join(self.messages),
            b"]",
        ]
        if self.tools is not None:
            parts += (b', "tools": ', self.tools)
        if options:
            parts += (b", ", json.dumps(options).encode()[1:-1])
        parts.append(b"}")
        return b"".join(parts)


def tools_json(tools: list[dict[str, Any]] | None) -> bytes | None:
    """The tools as the request carries them; None for none (no ``tools`` field is sent)."""
    return json.dumps(tools).encode() if tools else None


class MessageCodec:
    """Messages in JSON, each encoded the first time it is sent (``encoded`` counts them): every step of a
    run sends the whole conversation, and runs on the same history send it again, so later calls join
    bytes. An entry lasts as long as its message; one whose fields were reassigned is encoded anew."""

    def __init__(self, *, send_reasoning: bool) -> None:
        self._send_reasoning = send_reasoning
        self._seen: dict[int, tuple[weakref.ref[Message], tuple[object, ...], bytes]] = {}
        self._system: dict[str, list[bytes]] = {}
        self.encoded = 0

    def prompt(self, instructions: str, messages: Sequence[Message], tools: bytes | None = None) -> Prompt:
        """The instructions as the system message, then ``messages``."""
        items = list(self._system.get(instructions) or self._instructions(instructions))
        seen = self._seen
        for message in messages:
            entry = seen.get(id(message))
            if entry is None or not _unchanged(entry[1], message):
                entry = self._encode(message)
            items.append(entry[2])
        return Prompt(items, tools)

    def __len__(self) -> int:
        """Messages whose JSON is kept."""
        return len(self._seen)

    def _instructions(self, instructions: str) -> list[bytes]:
        if len(self._system) >= 64:
            self._system.clear()
        wire = to_openai(instructions, [], send_reasoning=False)
        encoded = self._system[instructions] = [json.dumps(m).encode() for m in wire]
        return encoded

    def _encode(self, message: Message) -> tuple[weakref.ref[Message], tuple[object, ...], bytes]:
        (wire,) = to_openai("", [message], send_reasoning=self._send_reasoning)
        key = id(message)
        fields = (
            message.content,
            message.reasoning,
            message.tool_calls,
            len(message.tool_calls),
            message.tool_call_id,
            message.role,
        )
        entry = self._seen[key] = (weakref.ref(message, self._forget(key)), fields, json.dumps(wire).encode())
        self.encoded += 1
        return entry

    def _forget(self, key: int) -> Callable[[weakref.ref[Message]], None]:
        def forget(ref: weakref.ref[Message]) -> None:
            entry = self._seen.get(key)
            if entry is not None and entry[0] is ref:
                del self._seen[key]

        return forget


def _unchanged(kept: tuple[object, ...], m: Message) -> bool:
    """The fields a message had when it was encoded are still the same objects (its tool calls as many)."""
    return (
        kept[0] is m.content
        and kept[1] is m.reasoning
        and kept[2] is m.tool_calls
        and kept[3] == len(m.tool_calls)
        and kept[4] is m.tool_call_id
        and kept[5] is m.role
    )


class StatusError(Exception):
    """A reply with an error status: its code, headers and body (JSON when it parses)."""

    def __init__(self, status: int, headers: Mapping[str, str], raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        try:
            self.body: Any = json.loads(raw)
        except ValueError:
            self.body = None
        super().__init__(f"Error code: {status} - {text[:500] or '(no body)'}")
        self.status = status
        self.headers = headers
        self.message = str(self)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date), if the reply carried one."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        seconds = float(value)
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(float(when.timestamp()) - time.time(), 0.0)


class ReplyError(Exception):
    """A reply that is an error object (``{"error": {...}}``) with status 200."""

    def __init__(self, body: Any) -> None:
        super().__init__(str(body))
        self.body = body


def error_message(error: Any) -> str:
    """The provider's own message in an error reply, else the error as text."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))
