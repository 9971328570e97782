"""The bounds of one train call, counted before it starts: the sampled runs, and the held-out comparison
of the checkpoint with the live version."""

from __future__ import annotations

from typing import Any

from machine.runs import counted
from machine.workspace import Workspace

from .._plan import Plan
from ._options import TrainOptions
from ._prepare import held_out_cases


def plan_train(ws: Workspace, name: str, options: TrainOptions | None = None, **fields: Any) -> Plan:
    """What ``train`` with these options may run at most: ``samples`` runs of each case (none when it
    resumes), then ``trials`` runs of each held-out case on each side (the live side's stored runs are
    reused). Its optimizer steps are epochs times the batches of the examples selected, so they are
    counted once the examples are; grading stored runs calls the judges, not the machine."""
    chosen = TrainOptions.of(options, **fields)
    held, _path = held_out_cases(ws, name)
    cases = len(ws.cases(name)) if chosen.samples and not chosen.resume else 0
    sampled = chosen.samples * cases
    compared = 2 * chosen.trials * len(held)
    return Plan(
        operation="train",
        machine=name,
        runs=sampled + compared,
        runs_are=(
            f"{counted(chosen.samples, 'sample')} of {counted(cases, 'case')}, and "
            f"{counted(chosen.trials, 'trial')} of {counted(len(held), 'held-out case')} on each side"
        ),
        steps_are=_steps_are(chosen),
    )


def _steps_are(chosen: TrainOptions) -> str:
    epochs = counted(chosen.epochs, "epoch") if chosen.epochs else "epochs planned for at least 30 steps"
    batch = f"batches of {chosen.batch_size}" if chosen.batch_size else "batches of at most 8"
    return f"{epochs} of {batch}, counted once the examples are selected"
