"""The chat-completions wire format: our messages as the endpoint reads them, and what its replies carry.

Kept apart from the client so the format can be read and tested without a connection.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from typing import Any

from machine.errors import UsageRefused
from machine.runs import Usage, to_openai

__all__ = ["to_openai"]  # kept here for the harnesses that import it from the wire module


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
    """A reply's token counts in ours (cached prompt tokens among the input). The counts are the
    endpoint's word: one that is not a whole number (NaN, a string, a bool, 1.5) is refused here, and the
    budget refuses negative or impossible ones."""
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    return Usage(
        input_tokens=_count(raw, "prompt_tokens"),
        cached_input_tokens=_count(details, "cached_tokens"),
        output_tokens=_count(raw, "completion_tokens"),
    )


def _count(raw: Any, name: str) -> int:
    value = getattr(raw, name, None) if raw is not None else None
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
