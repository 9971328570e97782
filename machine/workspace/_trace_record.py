"""What a run's trace is made of, gathered in the run's own process: its facts as plain values (ids,
model, usage, scorecard, each step's kind and time), which pickle in well under a microsecond a run, the
spans themselves being made by the exporter process (``_trace_spans``). Content (the instructions,
messages, tool arguments and results) is gathered only when capture is on, its secrets redacted as export
redacts them, each attribute cut to ``MAX_CONTENT`` characters: the redaction needs this process's
environment and the workspace's ``.env``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machine.runs import Redactor

if TYPE_CHECKING:
    from machine.budget import Usage
    from machine.runs import Message, Run, ToolCall

    from ._trace_spans import Facts

Step = tuple[str, int, "Message", "Usage | None"]
"""One event of a run as it was noted: its type, when (nanoseconds since the epoch), its message and the
model call's usage (an ``assistant`` step's)."""
MAX_CONTENT = 32_000
"""Characters a content attribute keeps (a cut one ends with an ellipsis)."""

_redactors: dict[Path | None, Redactor] = {}


def run_facts(run: Run, steps: list[Step], start: int, end: int, content: bool, root: Path | None) -> Facts:
    """The run's facts, its steps timed as they were noted, with its content when ``content``."""
    redactor = _redactor(root) if content else None
    usage = run.usage
    facts: Facts = {
        "id": run.id,
        "machine": run.machine,
        "harness": run.harness,
        "model": run.model,
        "status": run.status,
        "error": run.error if run.status == "error" else None,
        "start": start,
        "end": end,
        "usage": (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens),
        "cost": run.cost_usd,
        "version": run.version,
        "case": run.case_id,
        "trial": run.trial,
        "suite": run.suite_id,
        "stop": run.stop_reason,
        "conversation": run.conversation_id,
        "card": _card(run),
        "steps": _steps(run, steps, redactor),
    }
    if redactor is not None:
        facts["content"] = {
            "instructions": _text(redactor, run.instructions),
            "input": _content(redactor, _messages([*run.history, *run.trajectory[:1]])),
            "output": _content(redactor, _messages(run.trajectory[-1:])),
        }
    return facts


def graded_facts(run: Run, at: int) -> Facts:
    """The facts of a grading after the run was made: a ``grade`` span in the run's own trace."""
    graded = int(run.scorecard.graded_at.timestamp() * 1e9) if run.scorecard is not None else at
    return {
        "grade": True,
        "id": run.id,
        "machine": run.machine,
        "card": _card(run),
        "start": min(graded, at),
        "end": at,
    }


def _card(run: Run) -> tuple[Any, ...] | None:
    """(pass score, score, passed, each scored criterion's (name, score), the unscored ones' names)."""
    card = run.scorecard
    if card is None:
        return None
    scored = [(name, c.score) for name, c in card.criteria.items() if c.score is not None]
    return card.pass_score, card.score, card.passed, scored, list(card.unscored)


def _steps(run: Run, steps: list[Step], redactor: Redactor | None) -> list[tuple[Any, ...]]:
    """Each step as plain values: a reply (its usage, whether it called tools, and with content what it
    was asked and said), the calls it started (id, name, arguments), a result (its call, its error)."""
    kept: list[tuple[Any, ...]] = []
    conversation = [*run.history, *run.trajectory[:1]] if redactor is not None else []
    for kind, at, message, usage in steps:
        if kind == "assistant":
            counts = (
                None
                if usage is None
                else (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
            )
            asked = said = None
            if redactor is not None:
                asked = _content(redactor, _messages(conversation))
                said = _content(redactor, _messages([message]))
                conversation.append(message)
            kept.append((kind, at, counts, bool(message.tool_calls), asked, said))
        elif kind == "tool_call":
            calls = tuple((c.id, c.name, _arguments(redactor, c)) for c in message.tool_calls)
            kept.append((kind, at, calls))
        elif kind == "tool_result":
            result = None
            if redactor is not None:
                result = _text(redactor, message.content)
                conversation.append(message)
            error = message.content[:200] if message.is_error else None
            kept.append((kind, at, message.tool_call_id, error, result))
    return kept


def _arguments(redactor: Redactor | None, call: ToolCall) -> str | None:
    if redactor is None:
        return None
    return _content(redactor, call.arguments if call.arguments is not None else call.raw_arguments)


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


__all__ = ["MAX_CONTENT", "Step", "graded_facts", "run_facts"]
