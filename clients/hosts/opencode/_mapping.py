"""opencode's session messages and parts turned into our Messages and events.

opencode names our tools ``machine_<tool>`` and counts tokens its own way; both are undone here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from machine.runs import HarnessRequest, Message, ToolCall, Usage

MCP_NAME = "machine"
"""The name of the run's tool server in opencode: the model sees each tool as ``machine_<tool>``."""


def _prompt(request: HarnessRequest) -> str:
    """The run's message: its input, after earlier turns of a conversation given as a transcript."""
    if not request.history:
        return request.input
    said = [m for m in request.history if m.role in ("user", "assistant") and m.content]
    lines = [f"{m.role}: {m.content}" for m in said]
    return "The conversation so far:\n" + "\n".join(lines) + "\n\nThe new message:\n" + request.input


def _usage(tokens: Mapping[str, Any]) -> Usage:
    cache = tokens.get("cache") or {}
    read, write = int(cache.get("read") or 0), int(cache.get("write") or 0)
    return Usage(
        input_tokens=int(tokens.get("input") or 0) + read + write,
        cached_input_tokens=read,
        output_tokens=int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0),
    )


def step_messages(parts: list[dict[str, Any]]) -> tuple[Message | None, list[Message]]:
    """One step's assistant message (text, reasoning, tool calls under our tools' names) and its tool
    results, from the step's parts; no message for a step that said and called nothing."""
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
    reasoning = "".join(p.get("text", "") for p in parts if p.get("type") == "reasoning") or None
    calls, results = [], []
    for part in parts:
        if part.get("type") != "tool":
            continue
        state = part.get("state") or {}
        name = str(part.get("tool", "")).removeprefix(f"{MCP_NAME}_")
        call_id = str(part.get("callID") or part.get("id"))
        raw = state.get("input")
        calls.append(ToolCall(id=call_id, name=name, arguments=raw if isinstance(raw, dict) else None))
        failed = state.get("status") != "completed"
        content = state.get("output") if not failed else state.get("error") or state.get("status")
        results.append(
            Message(role="tool", content=str(content or ""), tool_call_id=call_id, name=name, is_error=failed)
        )
    if not (text or reasoning or calls):
        return None, []
    return Message(role="assistant", content=text, reasoning=reasoning, tool_calls=calls), results


def emit_step(request: HarnessRequest, message: Message | None, results: list[Message]) -> None:
    """A step's events in the in-process loop's order: the reply, then each call and its result."""
    if message is None:
        return
    request.emit("assistant", message)
    for call, result in zip(message.tool_calls, results, strict=True):
        request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
        request.emit("tool_result", result)
