"""One run's turn with its harness: the request built from the machine and the run, the harness's result
written onto the run; a harness that fails makes a failed run (its error in plain words), and only a
spent budget is raised, for the caller to stop on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Reached through its package, so what only a run uses loads with the first run (as in _workspace).
import machine.runs as on_run
from machine.errors import BudgetExceeded, MachineError, plain_spelling

if TYPE_CHECKING:
    from machine.budget import Budget
    from machine.runs import Effort, Event, Harness, Run, ToolContext
    from machine.spec import Machine


async def drive(
    harness: Harness,
    spec: Machine,
    run: Run,
    context: ToolContext,
    effort: Effort | None,
    on_event: Callable[[Event], None] | None,
    budget: Budget,
    root: Path,
) -> Run:
    """The run as the harness leaves it; a harness failure is a failed run, a spent budget is raised."""
    request = on_run.HarnessRequest(
        run_id=run.id,
        machine=spec.name,
        instructions=spec.instructions,
        input=run.input,
        model=run.model,
        tools=spec.tools,
        tool_context=context,
        budget=budget,
        history=run.history,
        max_steps=spec.max_steps,
        effort=effort,
        on_event=on_event,
        seed=on_run.run_seed(run.case_id, run.trial),
        root=root,
    )
    try:
        result = await harness.run(request)
    except BudgetExceeded:
        raise
    except MachineError as error:  # stored, and shown by every face: its fixes in plain words
        return run.model_copy(update={"status": "error", "error": _kept(error.explain(plain_spelling))})
    except Exception as error:
        return run.model_copy(update={"status": "error", "error": _kept(f"{type(error).__name__}: {error}")})
    return run.model_copy(
        update={
            "trajectory": on_run.bounded(result.trajectory),  # a host's, too, kept to the loop's bounds
            "output": on_run.cut(result.output, on_run.MAX_TEXT),
            "usage": result.usage,
            "cost_usd": result.cost_usd,
            "stop_reason": result.stop_reason,
            "retries": result.retries,
            "status": "error" if result.error else "ok",
            "error": None if result.error is None else _kept(result.error),
        }
    )


def _kept(error: str) -> str:
    """A failure's reason as the run keeps it: it may quote what an endpoint or a model sent."""
    return on_run.cut(error, on_run.MAX_TEXT)


__all__ = ["drive"]
