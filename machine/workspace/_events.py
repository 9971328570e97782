"""What a workspace tells its event log (``.machine/events.jsonl``) of each run: it started, each step as
the harness makes it, it finished, it was graded. A dashboard follows the log to show runs as they go."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from machine.runs import EventLog, Run, event_preview

from ._tracing import finished as trace_finished
from ._tracing import graded as trace_graded
from ._tracing import traced

if TYPE_CHECKING:
    from machine.runs import Event

Listener = Callable[["Event"], None]


def started(log: EventLog, run: Run, caller: Listener | None, root: Path | None = None) -> Listener:
    """Tell the log the run started; the harness's listener, which tells it each whole step (an answer,
    a tool call as it starts, its result; not the text as it streams, nor a turn that only calls tools,
    whose calls follow) and every event to the caller's own listener, noting each step for the run's
    trace when tracing is on (``_tracing``; ``root``'s ``.env`` is redacted from a trace's content)."""
    log.emit(
        "run_started",
        run=run.id,
        machine=run.machine,
        version=run.version,
        model=run.model,
        harness=run.harness,
        case_id=run.case_id,
        trial=run.trial,
        input=event_preview(run.input),
    )

    def listen(event: Event) -> None:
        message = event.message
        if event.type in ("tool_call", "tool_result") or (event.type == "assistant" and message.content):
            tool = ", ".join(c.name for c in message.tool_calls) or message.name
            text = event_preview(message.content)
            log.emit("step", run=run.id, machine=run.machine, type=event.type, text=text, tool=tool)
        if caller is not None:
            caller(event)

    return traced(run, listen, root)


def finished(log: EventLog, run: Run) -> None:
    """Tell the log the run finished (graded too, when graded as it was made), and send its trace."""
    trace_finished(run)
    log.emit(
        "run_finished",
        run=run.id,
        machine=run.machine,
        status=run.status,
        error=event_preview(run.error),
        cost_usd=run.cost_usd,
        score=run.score,
        output=event_preview(run.output),
    )


def graded(log: EventLog, run: Run) -> None:
    """Tell the log a run was graded on its own; a traced process adds a ``grade`` span to its trace."""
    trace_graded(run)
    log.emit("graded", run=run.id, machine=run.machine, score=run.score, passed=run.passed)
