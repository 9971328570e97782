"""The chat-completions wire format: our messages as the endpoint reads them, and what its replies carry.

Kept apart from the client so the format can be read and tested without a connection.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

from machine.runs import Message, Usage


def to_openai(instructions: str, messages: list[Message], *, send_reasoning: bool) -> list[dict[str, Any]]:
    """Our messages in the chat-completions wire format, the instructions as the system message."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for m in messages:
        if m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments
                            if c.raw_arguments is not None
                            else json.dumps(c.arguments or {}),
                        },
                    }
                    for c in m.tool_calls
                ]
            if send_reasoning and m.reasoning:
                item["reasoning_content"] = m.reasoning
            wire.append(item)
        elif m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


def tool_arguments(raw: str | None) -> dict[str, Any] | None:
    """Parsed tool-call arguments, or None when the model's JSON does not parse to an object."""
    if raw is None or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def provider_field(obj: Any, *names: str) -> Any:
    """A provider field the SDK does not declare (``reasoning_content``, ``reasoning``)."""
    for name in names:
        value = getattr(obj, name, None)
        if value is None:
            value = (getattr(obj, "model_extra", None) or {}).get(name)
        if value:
            return value
    return None


def usage_of(raw: Any) -> Usage:
    """A reply's token counts in ours (cached prompt tokens among the input)."""
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", 0) or 0,
        cached_input_tokens=cached,
        output_tokens=getattr(raw, "completion_tokens", 0) or 0,
    )


def retry_after(response: Any) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date), if the reply carried one."""
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(float(when.timestamp()) - time.time(), 0.0) if when else None


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
