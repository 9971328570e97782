"""What every training shares around its steps, SFT's and DPO's and RL's: the live version it builds on,
the gate fixed before its first step, the record marked when it is stopped (a spent budget, a cancel) and
how to resume it, which records may be resumed, and the candidate's report carrying the training."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from machine.errors import BadInputError, BudgetExceeded, Fix
from machine.measure import MeasureOptions
from machine.runs import Run, counted
from machine.spec import (
    VERSIONS_FILE,
    FixedGate,
    Machine,
    TrainingSummary,
    Version,
    open_book,
    require_live,
    write_book,
)
from machine.training import Checkpoint, Phase
from machine.versions import Candidate, check_fixed, fix_gate, propose
from machine.workspace import Workspace

from ._options import TrainOptions
from ._prepare import Target
from ._record import Pin, RecordFolder, TrainingRecord, differences


def live_version(ws: Workspace, spec: Machine) -> Version:
    """The live version, which a training builds on and is gated against."""
    return require_live(open_book(ws.machines_dir / spec.name, spec), spec, "be trained")


async def fixed_gate(
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
        raise stopped(folder, record, refused) from refused
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):  # stopped before its first step
        interrupted(folder, record, say)
        raise
    folder.write(record)
    return record.gate


def interrupted(folder: RecordFolder, record: TrainingRecord, say: Callable[[str], None]) -> None:
    """The record marked stopped from outside (Ctrl-C, a cancel), shielded from it, and how to go on."""
    with anyio.CancelScope(shield=True):
        folder.interrupted(record)
        say(folder.resume(record))


def stopped(folder: RecordFolder, record: TrainingRecord, refused: BudgetExceeded) -> BudgetExceeded:
    """The record marked stopped by a spent budget, and the error that says how to go on."""
    folder.stopped(record, refused, failed=False)
    return BudgetExceeded(
        f"training {folder.id} stopped after step {record.steps} ({refused.message}); its record is "
        f"{folder.folder}",
        fixes=[*refused.fixes, Fix("resume", folder.id, "to go on from its last checkpoint")],
    )


def earlier_record(root: Path, resume: str | None, name: str) -> RecordFolder | None:
    """The record ``resume`` names, when it may be resumed: checked before anything runs."""
    if resume is None:
        return None
    earlier = RecordFolder.open(root, resume)
    resumable(earlier, name)
    return earlier


def resumable(folder: RecordFolder, name: str) -> None:
    """Only a training that stopped or failed can be resumed; a finished one has its checkpoint."""
    record = folder.read()
    if record.status == "trained" and record.checkpoint is not None:
        model = record.checkpoint.model
        given = (("model", model), ("base_model", record.base_model))
        again = Fix(operation="propose", machine=name, arguments=given, purpose="measures it again")
        raise BadInputError(f"training {folder.id} finished already, with checkpoint {model}", fixes=[again])


async def proposed(
    ws: Workspace,
    at: Target,
    o: TrainOptions,
    folder: RecordFolder,
    record: TrainingRecord,
    checkpoint: Checkpoint,
    summary: TrainingSummary,
    gate: FixedGate,
    *,
    note: str,
    on_run: Callable[[Run], None] | None,
    on_begin: Callable[[Phase], None] | None,
) -> Candidate:
    """The checkpoint proposed against the live version on the gate fixed before training; the record
    names the candidate, and the candidate's report (as versions.json keeps it) carries the training."""
    name = at.spec.name
    candidate = await propose(
        ws, name, MeasureOptions.taken_from(o), model=checkpoint.model, base_model=at.base, note=note,
        gate=gate, on_run=on_run, on_begin=on_begin,
    )  # fmt: skip
    record.candidate = candidate.label
    folder.write(record)
    report = candidate.report.model_copy(update={"training": summary})
    book = open_book(ws.machines_dir / name, at.spec)
    stored = book.get(candidate.version.number)
    stored.report = report
    write_book(ws.machines_dir / name / VERSIONS_FILE, book)
    return Candidate(version=stored, report=report)


def open_record(
    ws: Workspace,
    root: Path,
    earlier: RecordFolder | None,
    record: TrainingRecord,
    data: tuple[str, int],
    held_path: Path,
) -> tuple[RecordFolder, TrainingRecord, Checkpoint | None]:
    """A new record holding ``data`` (``train.jsonl``'s text and its rows: the examples, or the cases RL
    samples), or the ``earlier`` one with its last checkpoint when it is the
    same training (refused, naming what differs, before any of its files is written over)."""
    text, rows = data
    record.datasets = [Pin.of(text, rows=rows)]
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
