"""A run's facts as the span tree its trace holds, in the GenAI semantic conventions' terms: ``invoke_agent
{machine}`` for the run, a ``chat {model}`` child per model call, an ``execute_tool {tool}`` child per tool
call, and the scorecard on the run's span. The conventions are spelled here, in the exporter process: a
run's own process only gathers the facts (``_trace_record``), plain values that pickle quickly.

A run's trace id is the first 16 bytes of the SHA-256 of its id and its span's id the next 8, so a run's
trace is found from the run, and a run graded later adds its ``grade`` span to that same trace.

Standard library only: the exporter loads this file by its path and imports no ``machine`` code."""

from __future__ import annotations

import hashlib
from typing import Any

Facts = dict[str, Any]
"""What ``_trace_record`` gathers of a run (``run_facts``) or of a later grading (``graded_facts``)."""
Span = dict[str, Any]
"""A span to make: name, start, end, attributes, error, and (a root) its ids or parent and children."""


def trace_ids(run_id: str) -> tuple[int, int]:
    """The run's trace id and its span's id, from its id alone."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:16], "big"), int.from_bytes(digest[16:24], "big")


def tree_of(facts: Facts) -> Span:
    """The spans of a run, or of a grading after it was made."""
    return _graded(facts) if facts.get("grade") else _run(facts)


def _run(f: Facts) -> Span:
    """The run's span with its model calls and tool calls as children, timed as the steps were noted."""
    common = {
        "gen_ai.provider.name": f["harness"],
        "gen_ai.system": f["harness"],
        "gen_ai.request.model": f["model"],
    }
    inputs, outputs, cached = f["usage"]
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": f["machine"],
        **common,
        "gen_ai.response.model": f["model"],
        "gen_ai.usage.input_tokens": inputs,
        "gen_ai.usage.output_tokens": outputs,
        "machine.run.id": f["id"],
        "machine.harness": f["harness"],
        "machine.status": f["status"],
        "machine.cost_usd": f["cost"],
    }
    optional = {
        "gen_ai.usage.cache_read.input_tokens": cached or None,
        "gen_ai.conversation.id": f["conversation"],
        "machine.version": f["version"],
        "machine.case.id": f["case"],
        "machine.trial": f["trial"],
        "machine.suite.id": f["suite"],
        "machine.stop_reason": f["stop"],
        "error.type": "run_failed" if f["status"] == "error" else None,
    }
    attributes.update((k, v) for k, v in optional.items() if v is not None)
    attributes.update(_scorecard(f["card"]))
    content = f.get("content")  # the run's own: its instructions, what it was asked, what it said
    if content is not None:
        attributes["gen_ai.system_instructions"] = content["instructions"]
        attributes["gen_ai.input.messages"] = content["input"]
        attributes["gen_ai.output.messages"] = content["output"]
    return {
        "ids": trace_ids(f["id"]),
        "name": f"invoke_agent {f['machine']}",
        "start": f["start"],
        "end": f["end"],
        "attributes": attributes,
        "error": f["error"],
        "children": _children(f, common),
    }


def _graded(f: Facts) -> Span:
    """A span for a grading after the run was made, a child of the run's span in the run's trace."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "grade", "gen_ai.agent.name": f["machine"]}
    attributes.update(_scorecard(f["card"]))
    attributes["machine.run.id"] = f["id"]
    return {
        "parent": trace_ids(f["id"]),
        "name": f"grade {f['machine']}",
        "start": f["start"],
        "end": f["end"],
        "attributes": attributes,
        "error": None,
        "children": [],
    }


def _scorecard(card: tuple[Any, ...] | None) -> dict[str, Any]:
    """The scorecard as attributes: the weighted score, passed, and each scored criterion's score;
    an UNSCORED criterion is named in ``machine.unscored``, never given a score."""
    if card is None:
        return {}
    pass_score, score, passed, scored, unscored = card
    found: dict[str, Any] = {"machine.pass_score": pass_score}
    if score is not None:
        found["machine.score"] = score
    if passed is not None:
        found["machine.passed"] = passed
    for name, value in scored:
        found[f"machine.criterion.{name}.score"] = value
    if unscored:
        found["machine.unscored"] = list(unscored)
    return found


def _children(f: Facts, common: dict[str, Any]) -> list[Span]:
    """A span per model call (from the step before it to its reply) and per tool call (from its start
    to its result), in the order they were made; a call whose result never came ends with the run's
    last step. Each step's content (None unless captured) goes on its span."""
    children: list[Span] = []
    calling: dict[str, Span] = {}
    last = f["start"]
    for step in f["steps"]:
        kind, at = step[0], step[1]
        if kind == "assistant":
            _, _, usage, calls, asked, said = step
            span = _chat(f["model"], usage, calls, last, at, common)
            if asked is not None:
                span["attributes"]["gen_ai.input.messages"] = asked
                span["attributes"]["gen_ai.output.messages"] = said
            children.append(span)
            last = at
        elif kind == "tool_call":
            for call_id, name, arguments in step[2]:
                span = calling[call_id] = _tool(call_id, name, at, arguments)
                children.append(span)
        elif kind == "tool_result":
            _, _, call_id, error, result = step
            opened = calling.pop(call_id, None)
            if opened is not None:
                opened["end"] = last = at
                if error is not None:
                    opened["error"] = error
                    opened["attributes"]["error.type"] = "tool_error"
                if result is not None:
                    opened["attributes"]["gen_ai.tool.call.result"] = result
    for span in calling.values():
        span["end"] = last
    return children


def _chat(
    model: str, usage: tuple[int, int, int] | None, calls: bool, start: int, end: int, common: dict[str, Any]
) -> Span:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **common, "gen_ai.response.model": model}
    if usage is not None:
        attributes["gen_ai.usage.input_tokens"] = usage[0]
        attributes["gen_ai.usage.output_tokens"] = usage[1]
        if usage[2]:
            attributes["gen_ai.usage.cache_read.input_tokens"] = usage[2]
    attributes["gen_ai.response.finish_reasons"] = ["tool_calls" if calls else "stop"]
    return {"name": f"chat {model}", "start": start, "end": end, "attributes": attributes, "error": None}


def _tool(call_id: str, name: str, at: int, arguments: str | None) -> Span:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = arguments
    return {"name": f"execute_tool {name}", "start": at, "attributes": attributes, "error": None}


__all__ = ["Facts", "Span", "trace_ids", "tree_of"]
