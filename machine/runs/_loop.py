"""The tool-calling agent loop shared by every harness whose model answers one turn at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from machine.errors import BudgetExceeded, HarnessError

from ._harness import HarnessRequest, HarnessResult, Turn
from ._records import Message, ToolCall, Usage
from ._tools import ToolFailure

NextTurn = Callable[[list[Message], int], Awaitable[Turn]]
"""Given the conversation so far (history and this run's messages) and the step number, the model's reply."""


async def call_tool(request: HarnessRequest, call: ToolCall) -> Message:
    """Run one tool call; any failure becomes an error result the model sees, never a crash."""
    found = next((t for t in request.tools if t.name == call.name), None)
    try:
        if found is None:
            names = ", ".join(t.name for t in request.tools) or "none"
            raise ToolFailure(f"there is no tool named {call.name!r}; the tools are: {names}")
        content, is_error = await found.invoke(call.arguments, request.tool_context), False
    except ToolFailure as failure:
        content, is_error = str(failure), True
    except Exception as error:
        content, is_error = f"{call.name} failed: {type(error).__name__}: {error}", True
    return Message(role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error)


async def run_loop(request: HarnessRequest, next_turn: NextTurn) -> HarnessResult:
    """Ask for turns until the model stops calling tools or ``max_steps`` model calls are spent.

    The budget is asked before every step. Refused before the first, BudgetExceeded is raised (nothing
    ran); refused later, the run stops there with ``stop_reason`` ``"budget"``, keeping what it did."""
    trajectory = [Message(role="user", content=request.input)]
    usage, cost = Usage(), 0.0
    retries: list[dict[str, Any]] = []
    stop_reason, error = "max_steps", None
    for step in range(request.max_steps):
        try:
            request.budget.check()
            turn = await next_turn([*request.history, *trajectory], step)
            cost += turn.charged(request.budget, request.model)
        except BudgetExceeded as refused:
            if step == 0:
                raise
            stop_reason, error = "budget", str(refused)
            break
        except HarnessError as failure:  # the run fails with what it did so far, and says why
            retries.extend(getattr(failure, "retries", []))
            cost += getattr(failure, "charged", 0.0)  # impossible usage is paid for at its reservation
            stop_reason, error = "error", str(failure)
            break
        retries.extend(turn.retries)
        usage = usage + turn.usage
        trajectory.append(turn.message)
        request.emit("assistant", turn.message)
        if not turn.message.tool_calls:
            stop_reason = "end_turn"
            break
        for call in turn.message.tool_calls:
            request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
            result = await call_tool(request, call)
            trajectory.append(result)
            request.emit("tool_result", result)
    return HarnessResult(
        trajectory=trajectory,
        usage=usage,
        cost_usd=cost,
        stop_reason=stop_reason,
        error=error,
        retries=retries,
    )
