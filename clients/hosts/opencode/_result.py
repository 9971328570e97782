"""A run's HarnessResult from its opencode session's messages, read at the end: what the watch passed on
and charged as the run went is not passed on or charged again."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from machine.runs import HarnessRequest, HarnessResult, Message, Usage

from ._mapping import _usage, emit_step, step_messages
from ._watch import _Watch


def _error_text(error: Mapping[str, Any]) -> str:
    data = error.get("data") or {}
    message = data.get("message") if isinstance(data, Mapping) else None
    return f"{error.get('name', 'error')}: {message or json.dumps(data)[:300]}"


def to_result(
    request: HarnessRequest, messages: list[dict[str, Any]], watch: _Watch | None = None
) -> HarnessResult:
    """Our trajectory from a session's messages: the user's input, then each step's assistant message
    followed by its tool results. Steps the ``watch`` did not pass on and charge are passed on and
    charged now."""
    trajectory = [Message(role="user", content=request.input)]
    seen = watch.seen if watch is not None else set()
    reached = watch is not None and watch.reached
    usage, cost = (watch.usage, watch.cost) if watch is not None else (Usage(), 0.0)
    finish, error, steps = None, None, 0
    for entry in messages:
        info, parts = entry.get("info", {}), entry.get("parts", [])
        if info.get("role") != "assistant":
            continue
        message, results = step_messages(parts)
        if info.get("id") not in seen:
            used = _usage(info.get("tokens") or {})
            usage = usage + used
            if watch is None or not watch.metered:  # else the model proxy charged the call
                cost += request.budget.charge(request.model, used)
            emit_step(request, message, results)
        finish = info.get("finish") or finish
        steps += 1
        if reached and steps > request.max_steps:
            continue  # a step that began before the abort landed: paid for, not part of the run
        if info.get("error"):
            error = _error_text(info["error"])
        if message is not None:
            trajectory += [message, *results]
    stopped = "max_steps" if reached or finish == "tool-calls" else "end_turn"
    return HarnessResult(
        trajectory=trajectory,
        usage=usage,
        cost_usd=cost,
        stop_reason="error" if error is not None else stopped,
        error=error,
        retries=watch.retries if watch is not None else [],
    )
