"""Train: fine-tune the live model's base on the machine's good runs and make the checkpoint a pending
candidate, gated on the held-out cases like any other. It samples the cases (``samples`` runs each),
grades what is pending, selects (current rubric only, each case's best ``best_of`` scoring at least
``min_score``, never a held-out case by id or input, only the live model's own runs unless
``any_model``), records what goes in, trains, and proposes the checkpoint against the live version."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from machine.budget import TRAINING
from machine.errors import BudgetExceeded, MachineError
from machine.runs import Run, git_revision, library_version
from machine.spec import (
    MAX_LOSSES,
    Machine,
    TrainingSummary,
    Version,
)
from machine.training import Checkpoint, Phase, Prepared, StepMetrics, Trainer, TrainSettings
from machine.versions import Candidate, thinned
from machine.workspace import Workspace

from ._gating import (
    earlier_record,
    fixed_gate,
    interrupted,
    live_version,
    open_record,
    proposed,
    stopped,
)
from ._options import TrainOptions
from ._prepare import ChooseSource, MakeTrainer, Ready, chosen_before, ready, target, trainer_for
from ._record import (
    TRAINING_DIR,
    RecordFolder,
    TrainingRecord,
    epoch_means,
    examples_text,
)
from ._rl_train import Told, train_rl
from ._sampling import grade_pending, sample
from ._schedule import refuse_unreachable


async def train(
    ws: Workspace,
    name: str,
    options: TrainOptions | None = None,
    *,
    trainer: Trainer | str | None = None,
    make_trainer: MakeTrainer | None = None,
    on_run: Callable[[Run], None] | None = None,
    on_step: Callable[[StepMetrics], None] | None = None,
    choose_source: ChooseSource | None = None,
    on_phase: Callable[[str], None] | None = None,
    on_begin: Callable[[Phase], None] | None = None,
    **fields: Any,
) -> Candidate:
    """Train ``name``'s model with ``options`` (or its fields given as keywords) and propose the checkpoint
    (see the module); ``trainer`` is one, or its name (default: the one for the base model), made by
    ``make_trainer``, else by the workspace's trainers. Told: ``on_phase``, lines;
    ``on_begin``, each counted phase (sampling, measuring a side, the steps); ``on_run``, ``on_step``."""
    o = TrainOptions.of(options, **fields)
    told = Told(on_phase or (lambda _line: None), on_begin or (lambda _phase: None), on_run, on_step)
    if o.method == "rl":
        return await train_rl(ws, name, o, trainer=trainer, make_trainer=make_trainer, told=told)
    return await _from_runs(ws, name, o, trainer, make_trainer, told, choose_source)


async def _from_runs(
    ws: Workspace,
    name: str,
    o: TrainOptions,
    trainer: Trainer | str | None,
    make_trainer: MakeTrainer | None,
    told: Told,
    choose_source: ChooseSource | None,
) -> Candidate:
    """SFT on the selected good runs, or DPO on the preference pairs (see the module)."""
    say, begin, on_run, on_step = told.say, told.begin, told.on_run, told.on_step
    at = target(ws, name)
    settings = o.settings(at.base, None if ws.effort is None else ws.effort.value, at.start)
    chosen = trainer_for(trainer, make_trainer, settings, ws)
    ws.budget.probe_price(TRAINING + at.base)  # an unknown training price is refused before anything runs
    root = ws.data_dir / TRAINING_DIR
    earlier = earlier_record(root, o.resume, name)
    o = o if earlier is None else chosen_before(o, earlier.read().selection)
    live = live_version(ws, at.spec)
    spent_before = ws.budget.spent
    sampled = await _gather(ws, at.spec, live, 0 if earlier else o.samples, o, on_run, say, begin)
    got = ready(ws, at, o, chosen, settings, choose=choose_source)
    for line in got.plan.lines():
        say(line)
    fresh = _fresh_record(ws, name, chosen.name, at.base, got, sampled)
    text = examples_text(got.examples)
    folder, record, done = open_record(ws, root, earlier, fresh, (text, len(got.examples)), at.held_path)
    went_in = _went_in(len(got.examples), len(got.runs), got.redacted, got.chose.sources)
    say(f"training record {folder.id}: {went_in}")
    resumed_at = None if earlier is None else _resuming(done, got.plan.steps, say)
    gate = await fixed_gate(ws, at, o, folder, record, on_run, say, begin)
    prepared, settings = got.prepared, got.settings
    record.renderer, record.status = prepared.renderer, "training"
    folder.write(record)
    checkpoint, took = await _fit(ws, folder, record, chosen, prepared, settings, done, on_step, say, begin)
    summary = _summary(folder, record, prepared, settings, len(got.runs), took, resumed_at)
    summary.cost_usd = ws.budget.spent - gate.cost_usd - spent_before  # the comparison's is the report's own
    say(f"proposing {checkpoint.model} against {live.label} on {at.held_path.name}")
    note = f"trained {folder.id}"
    return await proposed(
        ws, at, o, folder, record, checkpoint, summary, gate, note=note, on_run=on_run, on_begin=begin
    )


def _fresh_record(
    ws: Workspace, name: str, trainer: str, base: str, got: Ready, sampled: int
) -> TrainingRecord:
    """The record of a training begun now (no id yet: opening its folder gives it one)."""
    return TrainingRecord(
        id="",
        machine=name,
        trainer=trainer,
        base_model=base,
        settings=got.settings,
        selection=got.chose,
        sampled=sampled,
        redacted=got.redacted,
        plan=got.plan,
        library_version=library_version(),
        revision=git_revision(ws.root),
    )


def _resuming(done: Checkpoint | None, steps: int, say: Callable[[str], None]) -> int:
    """Say where a resumed training goes on from (the step after its last saved state); that step."""
    if done is None:
        say(f"resuming: no training state was saved, so it starts at step 1 of {steps}")
        return 1
    if done.step >= steps:
        say(f"resuming with all {steps} steps trained: the checkpoint is saved and measured")
    else:
        say(f"resuming at step {done.step + 1} of {steps}")
    return done.step + 1


async def _gather(
    ws: Workspace,
    spec: Machine,
    live: Version,
    samples: int,
    o: TrainOptions,
    on_run: Callable[[Run], None] | None,
    say: Callable[[str], None],
    begin: Callable[[Phase], None],
) -> int:
    """Sample the cases (``samples`` runs each; none when resuming, which would change what it learns) and
    grade what is pending; the runs sampled. A training that could not reach its steps even if every case
    gave its examples is refused before sampling."""
    sampled = 0
    if samples:
        cases = ws.cases(spec.name)
        refuse_unreachable(o, len(cases))
        say(f"sampling {samples} runs of each case on {live.model}")
        begin(Phase(what=f"sampling {live.label} on {live.model}", total=samples * len(cases)))
        sampled = await sample(ws, spec, cases, samples, o.concurrency, o.pass_score, on_run)
    graded = await grade_pending(ws, spec, o.concurrency, o.pass_score)
    if graded:
        say(f"graded {graded} stored runs")
    return sampled


def _went_in(examples: int, runs: int, redacted: int, found: dict[str, int]) -> str:
    """What the record holds, in words: where the runs came from, and a count of redacted secrets only
    when there were some."""
    hidden = f"; {redacted} secrets redacted" if redacted else ""
    came = ", ".join(f"{count} of {source}" for source, count in found.items())
    return f"{examples} examples from {runs} runs ({came}{hidden})"


async def _fit(
    ws: Workspace,
    folder: RecordFolder,
    record: TrainingRecord,
    trainer: Trainer,
    prepared: Prepared,
    settings: TrainSettings,
    done: Checkpoint | None,
    on_step: Callable[[StepMetrics], None] | None,
    say: Callable[[str], None],
    begin: Callable[[Phase], None],
) -> tuple[Checkpoint, float]:
    """Train, recording each step; a refused or failed step leaves the record saying so."""
    started = time.monotonic()
    planned, already = (record.plan.steps if record.plan else 0), (done.step if done else 0)
    begin(Phase(what=f"training {record.base_model}", total=planned, unit="steps", done=already))

    def step(metrics: StepMetrics) -> None:
        folder.step(metrics)
        record.steps = metrics.step
        of = {"record": folder.id, "machine": record.machine, "steps": planned or None}
        ws.events.emit("training_step", **of, **metrics.model_dump())
        if on_step is not None:
            on_step(metrics)

    def told(checkpoint: Checkpoint) -> None:
        at = {"step": checkpoint.step, "model": checkpoint.model}
        ws.events.emit("checkpoint", record=folder.id, machine=record.machine, **at)

    def saved(checkpoint: Checkpoint) -> None:
        folder.saved(checkpoint)
        told(checkpoint)

    sizes = f"{prepared.sequences} sequences, {prepared.tokens} tokens"
    folder.log(f"{trainer.name} on {record.base_model}: {sizes}")
    try:
        checkpoint = await trainer.train(
            prepared,
            settings,
            folder=folder.folder,
            budget=ws.budget,
            on_step=step,
            resume=done,
            on_saved=saved,
        )
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
        interrupted(folder, record, say)
        raise
    except BudgetExceeded as refused:
        raise stopped(folder, record, refused) from refused
    except MachineError as error:
        folder.stopped(record, error, failed=True)
        raise
    folder.checkpoint(checkpoint)
    told(checkpoint)
    record.checkpoint, record.status = checkpoint, "trained"
    folder.write(record)
    folder.log(f"checkpoint {checkpoint.model} after {checkpoint.step} steps")
    say(f"trained: {checkpoint.model}")
    return checkpoint, time.monotonic() - started


def _summary(
    folder: RecordFolder,
    record: TrainingRecord,
    prepared: Prepared,
    settings: TrainSettings,
    runs: int,
    seconds: float,
    resumed_at: int | None,
) -> TrainingSummary:
    steps = folder.metrics()
    losses = [m.loss for m in steps if m.loss is not None]
    return TrainingSummary(
        record=folder.id,
        trainer=record.trainer,
        base_model=record.base_model,
        renderer=prepared.renderer,
        sampled=record.sampled,
        runs=runs,
        examples=prepared.examples,
        sequences=prepared.sequences,
        whole_run=prepared.whole_run,
        per_step=prepared.per_step,
        tokens=prepared.tokens,
        target_tokens=prepared.target_tokens,
        epochs=settings.epochs,
        steps=record.steps,
        learning_rate=prepared.learning_rate,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        seconds=seconds,
        redacted=record.redacted,
        plan=record.plan,
        epoch_losses=epoch_means(steps),
        losses=thinned(losses, MAX_LOSSES),
        resumed_at=resumed_at,
    )
