"""Checking a training before making one: a dry run renders every example, checks each against the
renderer's prefix property (whole run or per step), counts and prices it and works out its plan, spending
nothing and writing nothing; a smoke run also trains two steps end to end (the first saved as a state, the
second resumed from it), samples the checkpoint once, and discards all of it.

Neither samples new runs or grades stored ones: a dry run reports how many stored runs are not graded yet
(``train`` grades them first, which can add examples)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from machine.budget import TRAINING
from machine.errors import BadInputError, MachineError, plain_spelling
from machine.runs import Model
from machine.spec import Case
from machine.training import Prepared, StepMetrics, Trainer, TrainingPlan, TrainSettings
from machine.versions import thin_gate
from machine.workspace import Workspace

from ._options import TrainOptions
from ._prepare import ChooseSource, MakeTrainer, Target, ready, target, trainer_for
from ._sampling import pending
from ._schedule import refuse_short

SMOKE_DIR = "smoke"
"""Under the workspace's data folder: where a smoke run trains, removed when it ends."""


class Smoke(Model):
    """What a smoke run did: two steps, a state saved and loaded, one sample from its checkpoint."""

    steps: list[StepMetrics]
    resumed_at: int
    """The step the saved state was loaded at (1: the first step's state, loaded for the second)."""
    checkpoint: str
    """The checkpoint it sampled (discarded since)."""
    case_id: str | None = None
    output: str
    """The checkpoint's reply to the case."""
    output_tokens: int = 0
    seconds: float


class TrainingCheck(Model):
    """What ``train --dry-run`` (or ``--smoke``) found; nothing of it was kept."""

    machine: str
    plan: TrainingPlan
    refused: str | None = None
    """Why ``train`` would refuse this plan (too few steps to learn), if it would, and what fixes it."""
    ungraded: int = 0
    """Stored runs not graded yet: ``train`` grades them first (judges may cost); they may add examples."""
    smoke: Smoke | None = None
    warnings: list[str] = Field(default_factory=list)
    """What would make the training spend for nothing: held-out cases too few for the checkpoint to pass
    the gate at ``min_z`` (``thin_gate``)."""

    def lines(self) -> list[str]:
        """The check as a person reads it."""
        said = [*self.plan.lines(), *(f"warning: {w}" for w in self.warnings)]
        if self.ungraded:
            said.append(f"  {self.ungraded} stored runs are not graded yet: train grades them first")
        if self.refused:
            said.append(f"train would refuse this plan: {self.refused}")
        if self.smoke is not None:
            s = self.smoke
            losses = ", ".join("-" if m.loss is None else f"{m.loss:.4f}" for m in s.steps)
            said.append(
                f"smoke: {len(s.steps)} steps (loss {losses}), a state saved and loaded at step "
                f"{s.resumed_at}, one sample from {s.checkpoint} in {s.seconds:.1f} s"
            )
            said.append(f"  {s.case_id or 'the case'}: {s.output[:200]!r}")
            said.append("  discarded: no training record, no candidate, no run stored")
        return said


async def check_training(
    ws: Workspace,
    name: str,
    options: TrainOptions | None = None,
    *,
    smoke: bool = False,
    trainer: Trainer | str | None = None,
    make_trainer: MakeTrainer | None = None,
    on_step: Callable[[StepMetrics], None] | None = None,
    choose_source: ChooseSource | None = None,
    **fields: Any,
) -> TrainingCheck:
    """The plan ``train`` would follow for ``name`` with ``options`` (a dry run), and with ``smoke`` two
    steps of it trained and sampled, then discarded (see the module)."""
    o = TrainOptions.of(options, **fields)
    at = target(ws, name)
    settings = o.settings(at.base, None if ws.effort is None else ws.effort.value, at.start)
    chosen = trainer_for(trainer, make_trainer, settings, ws)
    if smoke:
        ws.budget.probe_price(TRAINING + at.base)  # an unknown training price is refused before a step
    got = ready(ws, at, o, chosen, settings, refuse=False, choose=choose_source)
    refused: str | None = None
    try:
        refuse_short(got.plan, o)
    except BadInputError as error:
        refused = error.explain(plain_spelling)
    check = TrainingCheck(machine=name, plan=got.plan, refused=refused, ungraded=len(pending(ws, at.spec)))
    thin = thin_gate(len(at.held), o.min_z, where=at.held_path.name)
    check.warnings = [thin] if thin else []
    if smoke:
        check.smoke = await _smoke(ws, at, chosen, got.prepared, got.settings, on_step)
    return check


async def _smoke(
    ws: Workspace,
    at: Target,
    trainer: Trainer,
    prepared: Prepared,
    settings: TrainSettings,
    on_step: Callable[[StepMetrics], None] | None,
) -> Smoke:
    """Two steps: the first trained and saved, the second resumed from that state; then one sample from
    the checkpoint; everything written under a folder removed at the end."""
    started = time.monotonic()
    data = list(prepared.data or [])
    batch = max(1, min(settings.batch_size, len(data) // 2 or 1))
    two = (data * 2)[: 2 * batch]  # one sequence is used twice: still two steps
    one_epoch = settings.model_copy(update={"epochs": 1, "batch_size": batch})
    steps: list[StepMetrics] = []

    def seen(metrics: StepMetrics) -> None:
        steps.append(metrics)
        if on_step is not None:
            on_step(metrics)

    ws.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(tempfile.mkdtemp(prefix=SMOKE_DIR + "-", dir=ws.data_dir))
    try:
        first = await trainer.train(
            _part(prepared, two[:batch]), one_epoch, folder=folder, budget=ws.budget, on_step=seen
        )
        last = await trainer.train(
            _part(prepared, two), one_epoch, folder=folder, budget=ws.budget, on_step=seen, resume=first
        )
        if len(steps) != 2:
            raise MachineError(f"the smoke run trained {len(steps)} steps, not 2: the trainer did not resume")
        case = _a_case(ws, at)
        ws.budget.price_as.setdefault(last.model, at.base)
        run = await ws.run(at.spec, case.input, case=case, model=last.model, store=False)
        if run.status == "error":
            raise MachineError(f"the smoke run's checkpoint {last.model} could not be sampled: {run.error}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return Smoke(
        steps=steps,
        resumed_at=first.step,
        checkpoint=last.model,
        case_id=case.id,
        output=run.output,
        output_tokens=run.usage.output_tokens,
        seconds=time.monotonic() - started,
    )


def _a_case(ws: Workspace, at: Target) -> Case:
    """The case the checkpoint is sampled on: the machine's first, else its first held-out one."""
    try:
        cases = ws.cases(at.spec.name)
    except MachineError:
        cases = []
    return (cases or at.held)[0]


def _part(prepared: Prepared, data: list[Any]) -> Prepared:
    return prepared.model_copy(update={"data": data, "sequences": len(data)})
