"""The bounds of one train call, counted before it starts: the sampled runs, and the held-out comparison
of the checkpoint with the live version; and whether the held-out cases are too few for the checkpoint
to pass the gate at ``min_z`` (``thin_gate``)."""

from __future__ import annotations

from typing import Any

from machine.runs import counted
from machine.versions import thin_gate
from machine.workspace import Workspace

from .._plan import Plan
from ._live_checkpoint import live_checkpoint_of
from ._options import TrainOptions
from ._prepare import held_out_cases, target
from ._rl_train import rl_plan
from ._schedule import DPO_EPOCHS


def plan_train(ws: Workspace, name: str, options: TrainOptions | None = None, **fields: Any) -> Plan:
    """What ``train`` with these options may run at most: ``samples`` runs of each case (none when it
        resumes), then ``trials`` runs of each held-out case on each side (the live side's stored runs are
        reused). Its optimizer steps are epochs times the batches of the examples selected, so they are
        counted once the examples are; grading stored runs calls the judges, not the machine. RL's plan
    (``rl_plan``) counts its samples and the gate's runs, and prices its sampling, judging and training."""
    chosen = TrainOptions.of(options, **fields)
    if chosen.method == "rl":
        return rl_plan(ws, target(ws, name), chosen)
    held, path = held_out_cases(ws, name)
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
        steps_are=_steps_are(chosen, ws, name),
        warnings=[w for w in [thin_gate(len(held), chosen.min_z, where=path.name)] if w],
    )


def _steps_are(chosen: TrainOptions, ws: Workspace, name: str) -> str:
    """The steps in words, after the method: ``SFT`` or ``DPO at β 0.1 from the live checkpoint``."""
    batch = f"batches of {chosen.batch_size}" if chosen.batch_size else "batches of at most 8"
    if chosen.method == "dpo":
        epochs = counted(chosen.epochs or DPO_EPOCHS, "epoch")
        start = live_checkpoint_of(ws, name)
        source = f"the live checkpoint {start.model}, also the reference" if start else "the base model"
        return f"DPO at β {chosen.beta:g} from {source}: {epochs} of {batch}, counted once pairs are made"
    epochs = counted(chosen.epochs, "epoch") if chosen.epochs else "epochs planned for at least 30 steps"
    return f"SFT: {epochs} of {batch}, counted once the examples are selected"
