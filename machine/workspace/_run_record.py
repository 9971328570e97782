"""A run's record as it starts: what it is of, on what, with what provenance (``Workspace.run`` makes
one before anything runs, so a failed run is stored with the same fields as a finished one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

# Reached through their packages, so they load with the first run (as in ``_workspace``).
import machine.runs as on_run
import machine.spec as spec_on_run

if TYPE_CHECKING:
    from machine.runs import Effort, Harness, Message, Run
    from machine.spec import Case, Machine


class Where(Protocol):
    """Where a run is made: the workspace's folder and its git revision (a ``Workspace``)."""

    @property
    def root(self) -> Path: ...

    @property
    def revision(self) -> str | None: ...


def starting_run(
    ws: Where,
    spec: Machine,
    input: str,
    harness: Harness,
    model: str,
    effort: Effort | None,
    case: Case | None,
    trial: int | None,
    history: list[Message] | None,
    conversation_id: str | None,
) -> Run:
    """The run of ``spec`` on ``input`` as it starts in ``ws`` (at its git revision)."""
    return on_run.Run(
        machine=spec.name,
        version=spec_on_run.version_label(spec, model),
        model=model,
        harness=harness.name,
        setup=on_run.setup_of(harness, spec.name, model, ws.root),
        effort=None if effort is None else effort.value,
        instructions=spec.instructions,
        input=input,
        history=list(history or []),
        case_id=case.id if case else None,
        case=case.data() if case else None,
        trial=trial,
        conversation_id=conversation_id,
        revision=ws.revision,
        library_version=on_run.library_version(),
        timings=on_run.Timings(),
    )
