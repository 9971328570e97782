"""Train: fine-tune the live model's base on the machine's good runs and make the checkpoint a pending
candidate, gated on the held-out cases like any other. It samples the cases (``samples`` runs each),
grades what is pending, selects (current rubric only, each case's best ``best_of`` scoring at least
``min_score``, never a held-out case by id or input, only the live model's own runs unless
``any_model``), records what goes in, trains, and proposes the checkpoint against the live version."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from machine.budget import TRAINING
from machine.errors import BadInputError, BudgetExceeded, Fix, MachineError
from machine.measure import MeasureOptions
from machine.runs import Run, counted, git_revision, library_version
from machine.spec import (
    MAX_LOSSES,
    VERSIONS_FILE,
    FixedGate,
    Machine,
    TrainingSummary,
    Version,
    open_book,
    require_live,
    write_book,
)
from machine.training import Checkpoint, Phase, Prepared, StepMetrics, Trainer, TrainExample, TrainSettings
from machine.versions import Candidate, check_fixed, fix_gate, propose, thinned
from machine.workspace import Workspace

from ._options import TrainOptions
from ._prepare import ChooseSource, MakeTrainer, Ready, Target, chosen_before, ready, target, trainer_for
from ._record import (
    TRAINING_DIR,
    Pin,
    RecordFolder,
    TrainingRecord,
    differences,
    epoch_means,
    examples_text,
)
from ._sampling import grade_pending, sample
from ._schedule import refuse_unreachable


def _live(ws: Workspace, spec: Machine) -> Version:
    return require_live(open_book(ws.machines_dir / spec.name, spec), spec, "be trained")


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
    at = target(ws, name)
    settings = o.settings(at.base, None if ws.effort is None else ws.effort.value, at.start)
    chosen = trainer_for(trainer, make_trainer, settings, ws)
    ws.budget.probe_price(TRAINING + at.base)  # an unknown training price is refused before anything runs
    root = ws.data_dir / TRAINING_DIR
    earlier = _earlier(root, o.resume, name)
    o = o if earlier is None else chosen_before(o, earlier.read().selection)
    live = _live(ws, at.spec)
    say, begin = on_phase or (lambda _line: None), on_begin or (lambda _phase: None)
    spent_before = ws.budget.spent
    sampled = await _gather(ws, at.spec, live, 0 if earlier else o.samples, o, on_run, say, begin)
    got = ready(ws, at, o, chosen, settings, choose=choose_source)
    for line in got.plan.lines():
        say(line)
    fresh = _fresh_record(ws, name, chosen.name, at.base, got, sampled)
    folder, record, done = _open_record(ws, root, earlier, fresh, got.examples, at.held_path)
    went_in = _went_in(len(got.examples), len(got.runs), got.redacted, got.chose.sources)
    say(f"training record {folder.id}: {went_in}")
    resumed_at = None if earlier is None else _resuming(done, got.plan.steps, say)
    gate = await _gate(ws, at, o, folder, record, on_run, say, begin)
    prepared, settings = got.prepared, got.settings
    record.renderer, record.status = prepared.renderer, "training"
    folder.write(record)
    checkpoint, took = await _fit(ws, folder, record, chosen, prepared, settings, done, on_step, say, begin)
    summary = _summary(folder, record, prepared, settings, len(got.runs), took, resumed_at)
    summary.cost_usd = ws.budget.spent - gate.cost_usd - spent_before  # the comparison's is the report's own
    say(f"proposing {checkpoint.model} against {live.label} on {at.held_path.name}")
    candidate = await propose(
        ws,
        name,
        MeasureOptions.taken_from(o),
        model=checkpoint.model,
        base_model=at.base,
        note=f"trained {folder.id}",
        gate=gate,
        on_run=on_run,
        on_begin=begin,
    )
    record.candidate = candidate.label
    folder.write(record)
    return _with_training(ws, name, at.spec, candidate, summary)


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


async def _gate(
    ws: Workspace,
    at: Target,
    o: TrainOptions,
    folder: RecordFolder,
    record: TrainingRecord,
    on_run: Callable[[Run], None] | None,
    say: Callable[[str], None],
    begin: Callable[[Phase], None],
) -> FixedGate:
    """The gate the candidate will face, fixed in the record before the first step (the baseline measured
    now); a resumed training keeps its own, refused if its held-out file changed since."""
    if record.gate is not None:
        check_fixed(ws, record.gate, f"training {folder.id}")
        return record.gate
    held = ", ".join(at.spec.rubric.held)
    fixing = f"{at.held_path.name}, {counted(o.trials, 'trial')}, min_z {o.min_z:g}, no worse on {held}"
    say(f"fixing the gate before training ({fixing}): measuring the live version")
    measuring = MeasureOptions.taken_from(o)
    try:
        record.gate = await fix_gate(
            ws, at.spec.name, at.held, at.held_path, measuring, min_z=o.min_z, on_run=on_run, on_begin=begin
        )
    except BudgetExceeded as refused:
        raise _stopped(folder, record, refused) from refused
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):  # stopped before its first step
        _interrupted(folder, record, say)
        raise
    folder.write(record)
    return record.gate


def _interrupted(folder: RecordFolder, record: TrainingRecord, say: Callable[[str], None]) -> None:
    """The record marked stopped from outside (Ctrl-C, a cancel), shielded from it, and how to go on."""
    with anyio.CancelScope(shield=True):
        folder.interrupted(record)
        say(folder.resume(record))


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


def _stopped(folder: RecordFolder, record: TrainingRecord, refused: BudgetExceeded) -> BudgetExceeded:
    """The record marked stopped by a spent budget, and the error that says how to go on."""
    folder.stopped(record, refused, failed=False)
    return BudgetExceeded(
        f"training {folder.id} stopped after step {record.steps} ({refused.message}); its record is "
        f"{folder.folder}",
        fixes=[*refused.fixes, Fix("resume", folder.id, "to go on from its last checkpoint")],
    )


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


def _earlier(root: Path, resume: str | None, name: str) -> RecordFolder | None:
    """The record ``resume`` names, when it may be resumed: checked before anything runs."""
    if resume is None:
        return None
    earlier = RecordFolder.open(root, resume)
    _resumable(earlier, name)
    return earlier


def _resumable(folder: RecordFolder, name: str) -> None:
    """Only a training that stopped or failed can be resumed; a finished one has its checkpoint."""
    record = folder.read()
    if record.status == "trained" and record.checkpoint is not None:
        model = record.checkpoint.model
        given = (("model", model), ("base_model", record.base_model))
        again = Fix(operation="propose", machine=name, arguments=given, purpose="measures it again")
        raise BadInputError(f"training {folder.id} finished already, with checkpoint {model}", fixes=[again])


def _open_record(
    ws: Workspace,
    root: Path,
    earlier: RecordFolder | None,
    record: TrainingRecord,
    examples: list[TrainExample],
    held_path: Path,
) -> tuple[RecordFolder, TrainingRecord, Checkpoint | None]:
    """A new record holding ``examples``, or the ``earlier`` one with its last checkpoint when it is the
    same training (refused, naming what differs, before any of its files is written over)."""
    text = examples_text(examples)
    record.datasets = [Pin.of(text, rows=len(examples))]
    if earlier is None:
        inputs = [ws.data_dir / "store.db", held_path, ws.cases_file(record.machine)]
        folder = RecordFolder.create(root, inputs)
        record.id = folder.id
        folder.write_examples(text)
        folder.write(record)  # at once: a training killed before its first step still has its record
        return folder, record, None
    before = earlier.read()
    record.id, record.sampled, record.steps = before.id, before.sampled, before.steps
    record.gate = before.gate
    changed = differences(before.identity(), record.identity())
    if changed:
        raise BadInputError(
            f"training {before.id} cannot be resumed: what it would train on or how has changed ("
            + "; ".join(changed[:5])
            + "); start a new training instead"
        )
    done = earlier.last_checkpoint()
    record.steps = done.step if done is not None else 0
    earlier.rewind(record.steps)
    return earlier, record, done


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
        _interrupted(folder, record, say)
        raise
    except BudgetExceeded as refused:
        raise _stopped(folder, record, refused) from refused
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


def _with_training(
    ws: Workspace, name: str, spec: Machine, candidate: Candidate, summary: TrainingSummary
) -> Candidate:
    """The candidate with what it was trained on in its report, as versions.json keeps it."""
    report = candidate.report.model_copy(update={"training": summary})
    book = open_book(ws.machines_dir / name, spec)
    stored = book.get(candidate.version.number)
    stored.report = report
    write_book(ws.machines_dir / name / VERSIONS_FILE, book)
    return Candidate(version=stored, report=report)
