"""Train: fine-tune the live model's base on the machine's good runs and make the checkpoint a pending
candidate, gated on the held-out cases like any other. It samples the cases (``samples`` runs each),
grades what is pending, selects (current rubric only, each case's best ``best_of`` scoring at least
``min_score``, never a held-out case by id or input, only the live model's own runs unless
``any_model``), records what goes in, trains, and proposes the checkpoint against the live version."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from machine.errors import BadInputError, BudgetExceeded, Fix, MachineError
from machine.runs import LOCAL, TRAINING, Redactor, Run, git_revision, library_version
from machine.spec import DEFAULT_MIN_Z, Case, Machine, TrainingSummary, Version
from machine.spec._book import VERSIONS_FILE, _read_book, open_book, require_live, write_book
from machine.versions import Candidate, propose
from machine.workspace import Workspace, held_out

from ._record import Chosen, Pin, RecordFolder, TrainingRecord, differences, examples_text
from ._sampling import grade_pending, sample
from ._select import Funnel, Selection
from ._trainer import (
    Checkpoint,
    Prepared,
    StepMetrics,
    Trainer,
    TrainExample,
    TrainSettings,
    example_of,
    refuse_untaken,
)

TRAINING_DIR = "training"
SAVE_EVERY = 20
"""Steps between the trainer's saved states, so a stopped training resumes near where it stopped."""


def trainer_for(base_model: str, name: str | None = None) -> Trainer:
    """The trainer ``name`` (``tinker``), else the one for ``base_model``. The local trainer is an adapter:
    it is made by ``machine.ops.make_trainer``, which the command and the SDK handle pass in."""
    chosen = name or ("local" if base_model.startswith(LOCAL) else "tinker")
    if chosen == "tinker":
        try:
            module = importlib.import_module("machine.learn._tinker")  # the SDK loads only when training
        except ModuleNotFoundError as missing:
            raise BadInputError(
                f"the tinker trainer cannot be loaded ({missing}): install the training extra, "
                "pip install 'machine[train]'"
            ) from None
        trainer: Trainer = module.TinkerTrainer(save_every=SAVE_EVERY)
        return trainer
    if chosen == "local":
        raise BadInputError(
            f"the local trainer for {base_model!r} is made by machine.ops.make_trainer: pass "
            "make_trainer=machine.ops.make_trainer, or a trainer object, to train"
        )
    raise BadInputError(f"there is no trainer {chosen!r}; the trainers are: tinker, local")


MakeTrainer = Callable[[str | None, str, Path], Trainer]
"""Makes the trainer named (None: the one for the base model) for a base model in a workspace (its root)."""


def _chosen(
    trainer: Trainer | str | None, make: MakeTrainer | None, settings: TrainSettings, root: Path
) -> Trainer:
    """The trainer given, else the one ``make(name, base, root)`` (default: ``trainer_for``) makes; one
    that cannot honour the settings is refused."""
    base = settings.base_model
    if not isinstance(trainer, Trainer):
        trainer = make(trainer, base, root) if make is not None else trainer_for(base, trainer)
    refuse_untaken(trainer, settings)
    return trainer


def _held_out(ws: Workspace, name: str) -> tuple[list[Case], Path]:
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
    book = _read_book(ws.machines_dir / name / VERSIONS_FILE, name)
    if book is None:
        return spec, spec.model
    return spec, book.live.base_model or book.live.model


def _live(ws: Workspace, spec: Machine) -> Version:
    return require_live(open_book(ws.machines_dir / spec.name, spec), spec, "be trained")


async def train(
    ws: Workspace,
    name: str,
    *,
    samples: int = 0,
    trials: int = 3,
    best_of: int = 2,
    min_score: float = 1.0,
    settings: TrainSettings | None = None,
    any_model: bool = False,
    min_z: float = DEFAULT_MIN_Z,
    trainer: Trainer | str | None = None,
    make_trainer: MakeTrainer | None = None,
    resume: str | None = None,
    concurrency: int = 4,
    pass_score: float = 1.0,
    on_run: Callable[[Run], None] | None = None,
    on_step: Callable[[StepMetrics], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> Candidate:
    """Train ``name``'s model and propose the checkpoint (see the module); ``make_trainer`` names trainers."""
    if samples < 0 or trials < 1 or (best_of is not None and best_of < 1):
        raise BadInputError("samples must be 0 or more, and trials and best_of at least 1")
    spec, base = _machine(ws, name)
    held, held_path = _held_out(ws, name)
    settings = (settings or TrainSettings(base_model=base)).model_copy(update={"base_model": base})
    chosen = _chosen(trainer, make_trainer, settings, ws.root)
    ws.budget.probe_price(TRAINING + base)  # an unknown training price is refused before anything runs
    root = ws.data_dir / TRAINING_DIR
    earlier = _earlier(root, resume, name)
    live = _live(ws, spec)
    say = on_phase or (lambda _line: None)
    spent_before = ws.budget.spent
    # a resumed training sampled already: sampling again would change what it learns from
    sampled = await _gather(ws, spec, live, 0 if earlier else samples, concurrency, pass_score, on_run, say)
    runs, examples, chose, redacted = _examples(ws, spec, live, held, min_score, best_of, any_model, samples)
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
        ws, name, model=checkpoint.model, trials=trials, min_z=min_z, base_model=base,
        concurrency=concurrency, pass_score=pass_score, note=f"trained {folder.id}", on_run=on_run,
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
    concurrency: int,
    pass_score: float,
    on_run: Callable[[Run], None] | None,
    say: Callable[[str], None],
) -> int:
    """Sample the cases (``samples`` runs each) and grade what is pending; the runs sampled."""
    sampled = 0
    if samples:
        say(f"sampling {samples} runs of each case on {live.model}")
        sampled = await sample(ws, spec, ws.cases(spec.name), samples, concurrency, pass_score, on_run)
    graded = await grade_pending(ws, spec, concurrency, pass_score)
    if graded:
        say(f"graded {graded} stored runs")
    return sampled


def _examples(
    ws: Workspace,
    spec: Machine,
    live: Version,
    held: list[Case],
    min_score: float,
    best_of: int,
    any_model: bool,
    samples: int,
) -> tuple[list[Run], list[TrainExample], Chosen, int]:
    """The runs selected, the examples made of them, the selection as the record pins it, and how many
    secrets were redacted from the examples (those of the environment and the workspace's .env)."""
    redactor = Redactor.here(ws.root)
    selection = Selection(
        spec.rubric.fingerprint,
        min_score=min_score,
        best=best_of,
        held_out=held,
        own_model=None if any_model else live.model,
    )
    funnel = Funnel()
    runs = list(selection.from_store(ws.store, spec.name, funnel))
    examples = [e for e in (example_of(run, spec, redactor=redactor) for run in runs) if e is not None]
    if not examples:
        raise funnel.empty_error(spec.name)
    chose = Chosen(
        samples=samples,
        min_score=min_score,
        best_of=best_of,
        any_model=any_model,
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
        raise BadInputError(
            f"the runs selected were sampled at different reasoning efforts ({shown}), and a model learns "
            "the prompt it is shown: pass --effort to train at one (and select runs sampled at it)"
        )
    return settings.model_copy(update={"effort": efforts[0]}) if efforts else settings


def _resumable(folder: RecordFolder, name: str) -> None:
    """Only a training that stopped or failed can be resumed; a finished one has its checkpoint."""
    record = folder.read()
    if record.status == "trained" and record.checkpoint is not None:
        model = record.checkpoint.model
        raise BadInputError(
            f"training {folder.id} finished already, with checkpoint {model}: measure it again with "
            f"`machine propose {name} --model {model} --price-as {record.base_model}`"
        )


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
