"""Reading pi's JSON events: its messages in ours, and what the run has shown so far (``Progress``).

Pi prints one event a line (``--mode json``); the harness hands each to ``Progress.event``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from machine.runs import HarnessRequest, Message, ToolCall, Usage


def _usage(raw: Any) -> Usage:
    """Pi's usage in ours: its ``input`` excludes the cache, ours includes it."""
    if not isinstance(raw, dict):
        return Usage()
    cache_read, cache_write = int(raw.get("cacheRead") or 0), int(raw.get("cacheWrite") or 0)
    return Usage(
        input_tokens=int(raw.get("input") or 0) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        output_tokens=int(raw.get("output") or 0),
    )


def _blocks(content: Any, kind: str, key: str) -> list[str]:
    if isinstance(content, str):
        return [content] if kind == "text" else []
    return [str(b.get(key) or "") for b in content or [] if isinstance(b, dict) and b.get("type") == kind]


def assistant_message(raw: Mapping[str, Any]) -> Message:
    """An assistant message of pi's (text, thinking and tool-call blocks) as ours."""
    content = raw.get("content")
    calls = [
        ToolCall(
            id=str(b.get("id") or f"call_{i}"),
            name=str(b.get("name") or ""),
            arguments=b["arguments"] if isinstance(b.get("arguments"), dict) else None,
        )
        for i, b in enumerate(content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "toolCall"
    ]
    reasoning = "\n".join(t for t in _blocks(content, "thinking", "thinking") if t)
    return Message(
        role="assistant",
        content="".join(_blocks(content, "text", "text")),
        reasoning=reasoning or None,
        tool_calls=calls,
    )


def tool_message(raw: Mapping[str, Any]) -> Message:
    """A tool result of pi's as our tool message."""
    return Message(
        role="tool",
        content="\n".join(_blocks(raw.get("content"), "text", "text")),
        tool_call_id=str(raw.get("toolCallId") or ""),
        name=str(raw.get("toolName") or ""),
        is_error=bool(raw.get("isError")),
    )


@dataclass
class Progress:
    """What pi's events have shown so far."""

    request: HarnessRequest
    trajectory: list[Message]
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    steps: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    """The last failed model call's reason; cleared by a turn that succeeds."""
    ended: bool = False
    max_steps: bool = False
    calls_shown: set[str] = field(default_factory=set)
    metered: bool = False
    """Each call is charged by the model proxy as it is made: the events only give the trajectory."""

    @property
    def finished(self) -> bool:
        """Pi ended the run with the model's last reply (no retry of a failed call can follow)."""
        return self.ended and self.error is None and self.steps > 0

    def event(self, event: Mapping[str, Any]) -> None:
        """Take in one of pi's events: messages, tool calls starting, retries, turn and run ends."""
        kind = event.get("type")
        if kind == "message_end":
            self._message(event.get("message") or {})
        elif kind == "tool_execution_start":
            self._call_starts(str(event.get("toolCallId") or ""))
        elif kind == "auto_retry_start":
            wait = float(event.get("delayMs") or 0) / 1000
            self.retries.append(
                {
                    "attempt": event.get("attempt"),
                    "error": event.get("errorMessage"),
                    "wait_s": round(wait, 3),
                }
            )
        elif kind == "turn_end":
            content = (event.get("message") or {}).get("content")
            calls = any(isinstance(b, dict) and b.get("type") == "toolCall" for b in content or [])
            if self.steps >= self.request.max_steps and calls:  # the model wants another turn
                self.max_steps = True
        elif kind == "agent_end":
            self.ended = True

    def _message(self, raw: Mapping[str, Any]) -> None:
        role = raw.get("role")
        if role == "assistant":
            if raw.get("stopReason") in ("error", "aborted"):
                self.error = str(
                    raw.get("errorMessage") or f"the model call ended with {raw.get('stopReason')}"
                )
                return
            self.error = None
            message, usage = assistant_message(raw), _usage(raw.get("usage"))
            self.steps += 1
            self.usage = self.usage + usage
            if not self.metered:
                self.cost += self.request.budget.charge(self.request.model, usage)
            self.trajectory.append(message)
            self.request.emit("assistant", message)
        elif role == "toolResult":
            result = tool_message(raw)
            self._call_starts(result.tool_call_id or "")
            self.trajectory.append(result)
            self.request.emit("tool_result", result)

    def _call_starts(self, call_id: str) -> None:
        """Emit a tool call as it starts (a call pi refused before running it: with its result)."""
        if call_id in self.calls_shown:
            return
        for message in reversed(self.trajectory):
            call = next((c for c in message.tool_calls if c.id == call_id), None)
            if call is not None:
                self.calls_shown.add(call_id)
                self.request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
                return

    def text_delta(self, line: str) -> None:
        """Stream a reply's text (``message_update`` lines are only read when someone listens)."""
        if self.request.on_event is None:
            return
        try:
            update = json.loads(line).get("assistantMessageEvent") or {}
        except (ValueError, AttributeError):  # a line cut short: the whole message still comes at its end
            return
        if isinstance(update, dict) and update.get("type") == "text_delta" and update.get("delta"):
            self.request.emit("text", Message(role="assistant", content=str(update["delta"])))
