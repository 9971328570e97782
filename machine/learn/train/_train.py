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

from machine.errors import BadInputError, BudgetExceeded, Fix, MachineError
from machine.runs import (
    TRAINING,
    Checkpoint,
    Prepared,
    Redactor,
    Run,
    StepMetrics,
    Trainer,
    TrainExample,
    TrainSettings,
    git_revision,
    library_version,
    refuse_untaken,
)
from machine.spec import (
    VERSIONS_FILE,
    Case,
    Machine,
    TrainingSummary,
    Version,
    open_book,
    read_book,
    require_live,
    write_book,
)
from machine.versions import Candidate, propose
from machine.workspace import Workspace, held_out

from ._examples import example_of
from ._options import TrainOptions
from ._record import Chosen, Pin, RecordFolder, TrainingRecord, differences, examples_text
from ._sampling import grade_pending, sample
from ._select import Funnel, Selection

TRAINING_DIR = "training"
MakeTrainer = Callable[[str | None, str, Path], Trainer]
"""Makes the trainer named (None: the one for the base model) for a base model in a workspace (its root)."""


def _chosen(
    trainer: Trainer | str | None, make: MakeTrainer | None, settings: TrainSettings, root: Path
) -> Trainer:
    """The trainer given, else the one ``make(name, base, root)`` makes (``machine.ops.make_trainer``:
    the trainers are adapters); one that cannot honour the settings is refused."""
    base = settings.base_model
    if not isinstance(trainer, Trainer):
        if make is None:
            raise BadInputError(
                "train needs a trainer object or a way to make one by name: pass "
                "make_trainer=machine.ops.make_trainer"
            )
        trainer = make(trainer, base, root)
    refuse_untaken(trainer, settings)
    return trainer


def held_out_cases(ws: Workspace, name: str) -> tuple[list[Case], Path]:
    """The held-out cases training measures its checkpoint on, and their file; refused when there are none."""
    found = held_out(ws, name)
    if found is None or found.path is None:
        path = ws.cases_file(name, None, default="holdout.json")
        raise BadInputError(
            f"machine {name!r} has no held-out cases ({path}): training needs some to measure the checkpoint "
            "on cases it never learned from; write holdout.json"
        )
    return found.cases, found.path


def _machine(ws: Workspace, name: str) -> tuple[Machine, str]:
    """The machine and the base model its live version trains, read without recording anything (the
    first version is recorded once the training price is known)."""
    spec = ws.reload(name)
    if spec.counterpart is not None:
        raise BadInputError(
            f"machine {name!r} holds conversations with a counterpart; train takes single runs"
        )
    book = read_book(ws.machines_dir / name / VERSIONS_FILE)
    if book is None:
        return spec, spec.model
    return spec, book.live.base_model or book.live.model


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
    on_phase: Callable[[str], None] | None = None,
    **fields: Any,
) -> Candidate:
    """Train ``name``'s model with ``options`` (or its fields given as keywords) and propose the checkpoint
    (see the module); ``trainer`` is one, or its name for ``make_trainer`` to make."""
    o = TrainOptions.of(options, **fields)
    spec, base = _machine(ws, name)
    held, held_path = held_out_cases(ws, name)
    settings = o.settings(base, None if ws.effort is None else ws.effort.value)
    chosen = _chosen(trainer, make_trainer, settings, ws.root)
    ws.budget.probe_price(TRAINING + base)  # an unknown training price is refused before anything runs
    root = ws.data_dir / TRAINING_DIR
    earlier = _earlier(root, o.resume, name)
    live = _live(ws, spec)
    say = on_phase or (lambda _line: None)
    spent_before = ws.budget.spent
    # a resumed training sampled already: sampling again would change what it learns from
    sampled = await _gather(ws, spec, live, 0 if earlier else o.samples, o, on_run, say)
    runs, examples, chose, redacted = _examples(ws, spec, live, held, o)
    fresh = TrainingRecord(
        id="", machine=name, trainer=chosen.name, base_model=base, settings=settings, selection=chose,
        sampled=sampled, redacted=redacted, library_version=library_version(),
        revision=git_revision(ws.root),
    )  # fmt: skip
    folder, record, done = _open_record(ws, root, earlier, fresh, examples, held_path)
    say(f"training record {folder.id}: {_went_in(len(examples), len(runs), redacted)}")
    settings = _at_their_effort(settings, examples)
    prepared = chosen.prepare(examples, settings)
    record.renderer, record.status = prepared.renderer, "training"
    folder.write(record)
    checkpoint, seconds = await _fit(ws, folder, record, chosen, prepared, settings, done, on_step, say)
    spent_training = ws.budget.spent
    say(f"proposing {checkpoint.model} against {live.label} on {held_path.name}")
    candidate = await propose(
        ws, name, model=checkpoint.model, trials=o.trials, min_z=o.min_z, base_model=base,
        concurrency=o.concurrency, pass_score=o.pass_score, note=f"trained {folder.id}", on_run=on_run,
    )  # fmt: skip
    summary = _summary(folder, record, prepared, settings, record.sampled, len(runs), seconds)
    summary.cost_usd = spent_training - spent_before  # the held-out comparison's cost is the report's own
    record.candidate = candidate.label
    folder.write(record)
    return _with_training(ws, name, spec, candidate, summary)


async def _gather(
    ws: Workspace,
    spec: Machine,
    live: Version,
    samples: int,
    o: TrainOptions,
    on_run: Callable[[Run], None] | None,
    say: Callable[[str], None],
) -> int:
    """Sample the cases (``samples`` runs each) and grade what is pending; the runs sampled."""
    sampled = 0
    if samples:
        say(f"sampling {samples} runs of each case on {live.model}")
        sampled = await sample(ws, spec, ws.cases(spec.name), samples, o.concurrency, o.pass_score, on_run)
    graded = await grade_pending(ws, spec, o.concurrency, o.pass_score)
    if graded:
        say(f"graded {graded} stored runs")
    return sampled


def _examples(
    ws: Workspace,
    spec: Machine,
    live: Version,
    held: list[Case],
    o: TrainOptions,
) -> tuple[list[Run], list[TrainExample], Chosen, int]:
    """The runs selected, the examples made of them, the selection as the record pins it, and how many
    secrets were redacted from the examples (those of the environment and the workspace's .env)."""
    redactor = Redactor.here(ws.root)
    selection = Selection(
        spec.rubric.fingerprint,
        min_score=o.min_score,
        best=o.best_of,
        held_out=held,
        own_model=None if o.any_model else live.model,
    )
    funnel = Funnel()
    runs = list(selection.from_store(ws.store, spec.name, funnel))
    examples = [e for e in (example_of(run, spec, redactor=redactor) for run in runs) if e is not None]
    if not examples:
        raise funnel.empty_error(spec.name)
    chose = Chosen(
        samples=o.samples,
        min_score=o.min_score,
        best_of=o.best_of,
        any_model=o.any_model,
        own_model=selection.own_model,
        held_out=sorted(c.id for c in held),
        run_ids=[e.run_id for e in examples],
    )
    return runs, examples, chose, redactor.count


def _went_in(examples: int, runs: int, redacted: int) -> str:
    """What the record holds, in words: a count of redacted secrets only when there were some."""
    hidden = f" ({redacted} secrets redacted)" if redacted else ""
    return f"{examples} examples from {runs} runs{hidden}"


def _earlier(root: Path, resume: str | None, name: str) -> RecordFolder | None:
    """The record ``resume`` names, when it may be resumed: checked before anything runs."""
    if resume is None:
        return None
    earlier = RecordFolder.open(root, resume)
    _resumable(earlier, name)
    return earlier


def _at_their_effort(settings: TrainSettings, examples: list[TrainExample]) -> TrainSettings:
    """The settings with the effort the runs were sampled at, when none was given: a renderer that
    writes the effort into the prompt must render the prompt the model was given."""
    if settings.effort is not None:
        return settings
    efforts = sorted({e.effort for e in examples if e.effort is not None})
    if len(efforts) > 1:
        shown = ", ".join(f"{e:g}" for e in efforts)
        one = Fix("effort", f"{efforts[0]:g}", "to train at one (and select runs sampled at it)")
        raise BadInputError(
            f"the runs selected were sampled at different reasoning efforts ({shown}), and a model learns "
            "the prompt it is shown",
            fixes=[one],
        )
    return settings.model_copy(update={"effort": efforts[0]}) if efforts else settings


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
        return folder, record, None
    before = earlier.read()
    record.id, record.sampled, record.steps = before.id, before.sampled, before.steps
    changed = differences(before.identity(), record.identity())
    if changed:
        raise BadInputError(
            f"training {before.id} cannot be resumed: what it would train on or how has changed ("
            + "; ".join(changed[:5])
            + "); start a new training instead"
        )
    return earlier, record, earlier.last_checkpoint()


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
) -> tuple[Checkpoint, float]:
    """Train, recording each step; a refused or failed step leaves the record saying so."""
    started = time.monotonic()

    def step(metrics: StepMetrics) -> None:
        folder.step(metrics)
        record.steps = metrics.step
        if on_step is not None:
            on_step(metrics)

    folder.log(
        f"{trainer.name} on {record.base_model}: {prepared.sequences} sequences, {prepared.tokens} tokens"
    )

    try:
        checkpoint = await trainer.train(
            prepared, settings, folder=folder.folder, budget=ws.budget, on_step=step, resume=done,
            on_saved=folder.saved,
        )  # fmt: skip
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
        with anyio.CancelScope(shield=True):
            folder.interrupted(record)
        raise
    except BudgetExceeded as refused:
        folder.stopped(record, refused, failed=False)
        raise BudgetExceeded(
            f"training {folder.id} stopped after step {record.steps} ({refused.message}); its record is "
            f"{folder.folder}",
            fixes=[*refused.fixes, Fix("resume", folder.id, "to go on from its last checkpoint")],
        ) from refused
    except MachineError as error:
        folder.stopped(record, error, failed=True)
        raise
    folder.checkpoint(checkpoint)
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
    sampled: int,
    runs: int,
    seconds: float,
) -> TrainingSummary:
    losses = [m.loss for m in folder.metrics() if m.loss is not None]
    return TrainingSummary(
        record=folder.id,
        trainer=record.trainer,
        base_model=record.base_model,
        renderer=prepared.renderer,
        sampled=sampled,
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
