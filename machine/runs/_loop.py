"""The tool-calling agent loop shared by every harness whose model answers one turn at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from machine.budget import Usage
from machine.errors import BudgetExceeded, HarnessError

from ._calls import MAX_RUN_TEXT, checked_turn, kept_result, text_size
from ._harness import HarnessRequest, HarnessResult, Turn
from ._records import Message, ToolCall
from ._tools import ToolFailure

NextTurn = Callable[[list[Message], int], Awaitable[Turn]]
"""Given the conversation so far (history and this run's messages) and the step number, the model's reply."""


async def call_tool(request: HarnessRequest, call: ToolCall, refused: str | None = None) -> Message:
    """Run one tool call (unless it was ``refused`` before it ran, saying why); any failure becomes an
    error result the model sees, never a crash. The result is kept to ``MAX_RESULT``."""
    found = next((t for t in request.tools if t.name == call.name), None)
    try:
        if refused is not None or found is None:
            names = ", ".join(t.name for t in request.tools) or "none"
            raise ToolFailure(refused or f"there is no tool named {call.name!r}; the tools are: {names}")
        content, is_error = await found.invoke(call.arguments, request.tool_context), False
    except ToolFailure as failure:
        content, is_error = str(failure), True
    except Exception as error:
        content, is_error = f"{call.name} failed: {type(error).__name__}: {error}", True
    gate = request.tool_context.edits
    edits = gate.take() if gate is not None else []
    result = Message(
        role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error, edits=edits
    )
    return kept_result(result)


async def run_loop(request: HarnessRequest, next_turn: NextTurn) -> HarnessResult:
    """Ask for turns until the model stops calling tools or ``max_steps`` model calls are spent.

    The budget is asked before every step. Refused before the first, BudgetExceeded is raised (nothing
    ran); refused later, the run stops there with ``stop_reason`` ``"budget"``, keeping what it did."""
    trajectory = [Message(role="user", content=request.input)]
    held = 0  # the text this run's turns and results hold (bounded by MAX_RUN_TEXT)
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
        message, refusals = checked_turn(turn.message, {t.name for t in request.tools})
        trajectory.append(message)
        request.emit("assistant", message, turn.usage)
        if not message.tool_calls:
            stop_reason = "end_turn"
            break
        held += text_size([message])
        for call in message.tool_calls:
            request.emit("tool_call", Message(role="assistant", tool_calls=[call]))
            result = await call_tool(request, call, refusals.get(call.id))
            trajectory.append(result)
            held += len(result.content)
            request.emit("tool_result", result)
        gate = request.tool_context.edits
        if gate is not None and gate.stopped:  # the person said quit when asked about a change
            stop_reason = "stopped"
            break
        if held > MAX_RUN_TEXT:
            stop_reason = "error"
            error = (
                f"the run's trajectory passed {MAX_RUN_TEXT:,} characters, the most a run may hold, so it "
                "stopped there"
            )
            break
    return HarnessResult(
        trajectory=trajectory,
        usage=usage,
        cost_usd=cost,
        stop_reason=stop_reason,
        error=error,
        retries=retries,
    )
