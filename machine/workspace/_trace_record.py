"""A run as the span tree its trace holds, in the GenAI semantic conventions' terms: ``invoke_agent
{machine}`` for the run, a ``chat {model}`` child per model call, an ``execute_tool {tool}`` child per
tool call, and the scorecard on the run's span. Made here, in plain values (the exporter process knows
spans, not runs), so the conventions are spelled in one place.

A run's trace id is the first 16 bytes of the SHA-256 of its id and its span's id the next 8, so a run's
trace is found from the run, and a run graded later adds its ``grade`` span to that same trace. Content
(the instructions, messages, tool arguments and results) is there only when capture is on, its secrets
redacted as export redacts them, each attribute cut to ``MAX_CONTENT`` characters.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machine.runs import Redactor

if TYPE_CHECKING:
    from machine.budget import Usage
    from machine.runs import Message, Run

Step = tuple[str, int, "Message", "Usage | None"]
"""One event of a run as it was noted: its type, when (nanoseconds since the epoch), its message and the
model call's usage (an ``assistant`` step's)."""
Span = dict[str, Any]
MAX_CONTENT = 32_000
"""Characters a content attribute keeps (a cut one ends with an ellipsis)."""

_redactors: dict[Path | None, Redactor] = {}


def trace_ids(run_id: str) -> tuple[int, int]:
    """The run's trace id and its span's id, from its id alone."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:16], "big"), int.from_bytes(digest[16:24], "big")


def run_record(run: Run, steps: list[Step], start: int, end: int, content: bool, root: Path | None) -> Span:
    """The run's span with its model calls and tool calls as children, timed as the steps were noted."""
    common = {
        "gen_ai.provider.name": run.harness,
        "gen_ai.system": run.harness,
        "gen_ai.request.model": run.model,
    }
    attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": run.machine}
    attributes.update(common)
    attributes.update(_run_attributes(run))
    redactor = _redactor(root) if content else None
    if redactor is not None:
        attributes["gen_ai.system_instructions"] = _text(redactor, run.instructions)
        attributes["gen_ai.input.messages"] = _content(
            redactor, _messages([*run.history, *run.trajectory[:1]])
        )
        attributes["gen_ai.output.messages"] = _content(redactor, _messages([m for m in run.trajectory[-1:]]))
    return {
        "ids": trace_ids(run.id),
        "name": f"invoke_agent {run.machine}",
        "start": start,
        "end": end,
        "attributes": attributes,
        "error": run.error if run.status == "error" else None,
        "children": _children(run, steps, start, common, redactor),
    }


def graded_record(run: Run, at: int) -> Span:
    """A span for a grading after the run was made, a child of the run's span in the run's trace."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "grade", "gen_ai.agent.name": run.machine}
    attributes.update(_scorecard(run))
    attributes["machine.run.id"] = run.id
    started = run.scorecard.graded_at.timestamp() if run.scorecard is not None else at / 1e9
    return {
        "parent": trace_ids(run.id),
        "name": f"grade {run.machine}",
        "start": min(int(started * 1e9), at),
        "end": at,
        "attributes": attributes,
        "error": None,
        "children": [],
    }


def _run_attributes(run: Run) -> dict[str, Any]:
    usage = run.usage
    found: dict[str, Any] = {
        "gen_ai.response.model": run.model,
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "machine.run.id": run.id,
        "machine.harness": run.harness,
        "machine.status": run.status,
        "machine.cost_usd": run.cost_usd,
    }
    optional = {
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens or None,
        "gen_ai.conversation.id": run.conversation_id,
        "machine.version": run.version,
        "machine.case.id": run.case_id,
        "machine.trial": run.trial,
        "machine.suite.id": run.suite_id,
        "machine.stop_reason": run.stop_reason,
        "error.type": "run_failed" if run.status == "error" else None,
    }
    found.update((k, v) for k, v in optional.items() if v is not None)
    found.update(_scorecard(run))
    return found


def _scorecard(run: Run) -> dict[str, Any]:
    """The scorecard as attributes: the weighted score, passed, and each scored criterion's score;
    an UNSCORED criterion is named in ``machine.unscored``, never given a score."""
    card = run.scorecard
    if card is None:
        return {}
    found: dict[str, Any] = {"machine.pass_score": card.pass_score}
    if card.score is not None:
        found["machine.score"] = card.score
    if card.passed is not None:
        found["machine.passed"] = card.passed
    for name, criterion in card.criteria.items():
        if criterion.score is not None:
            found[f"machine.criterion.{name}.score"] = criterion.score
    if card.unscored:
        found["machine.unscored"] = list(card.unscored)
    return found


def _children(
    run: Run, steps: list[Step], start: int, common: dict[str, Any], redactor: Redactor | None
) -> list[Span]:
    """A span per model call (from the step before it to its reply) and per tool call (from its start
    to its result), in the order they were made."""
    children: list[Span] = []
    calling: dict[str | None, tuple[int, Span]] = {}
    conversation = [*run.history, *run.trajectory[:1]]
    last = start
    for kind, at, message, usage in steps:
        if kind == "assistant":
            span = _chat(run, message, usage, last, at, common)
            if redactor is not None:
                span["attributes"]["gen_ai.input.messages"] = _content(redactor, _messages(conversation))
                span["attributes"]["gen_ai.output.messages"] = _content(redactor, _messages([message]))
                conversation.append(message)
            children.append(span)
            last = at
        elif kind == "tool_call":
            for call in message.tool_calls:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                    "gen_ai.tool.type": "function",
                }
                if redactor is not None:
                    arguments = call.arguments if call.arguments is not None else call.raw_arguments
                    attributes["gen_ai.tool.call.arguments"] = _content(redactor, arguments)
                span = {
                    "name": f"execute_tool {call.name}",
                    "start": at,
                    "attributes": attributes,
                    "error": None,
                }
                calling[call.id] = (at, span)
                children.append(span)
        elif kind == "tool_result":
            opened = calling.pop(message.tool_call_id, None)
            if opened is not None:
                span = opened[1]
                span["end"] = last = at
                if message.is_error:
                    span["error"] = message.content[:200]
                    span["attributes"]["error.type"] = "tool_error"
                if redactor is not None:
                    span["attributes"]["gen_ai.tool.call.result"] = _text(redactor, message.content)
                    conversation.append(message)
    for _, span in calling.values():  # a call whose result never came: it ends with the run
        span["end"] = last
    return children


def _chat(
    run: Run, message: Message, usage: Usage | None, start: int, end: int, common: dict[str, Any]
) -> Span:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        **common,
        "gen_ai.response.model": run.model,
    }
    if usage is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
        if usage.cached_input_tokens:
            attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
    attributes["gen_ai.response.finish_reasons"] = ["tool_calls" if message.tool_calls else "stop"]
    return {"name": f"chat {run.model}", "start": start, "end": end, "attributes": attributes, "error": None}


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in the conventions' shape: a role and its parts (text, tool calls, a tool's response)."""
    shaped = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        if message.role == "tool":
            parts.append(
                {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
            )
        elif message.content:
            parts.append({"type": "text", "content": message.content})
        for call in message.tool_calls:
            arguments = call.arguments if call.arguments is not None else call.raw_arguments
            parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
        shaped.append({"role": message.role, "parts": parts})
    return shaped


def _content(redactor: Redactor, value: Any) -> str:
    return _text(redactor, json.dumps(value, ensure_ascii=False, default=str))


def _text(redactor: Redactor, text: str) -> str:
    kept = redactor.text(text)
    return kept if len(kept) <= MAX_CONTENT else kept[: MAX_CONTENT - 1] + "…"


def _redactor(root: Path | None) -> Redactor:
    """A redactor of this process's environment and the workspace's ``.env``, made once a workspace."""
    found = _redactors.get(root)
    if found is None:
        found = _redactors[root] = Redactor.here(root)
    return found


__all__ = ["MAX_CONTENT", "Step", "graded_record", "run_record", "trace_ids"]
