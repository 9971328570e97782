"""What a preference training starts from: the live version's checkpoint when it is a fine-tune of its
base. DPO that started from the base would undo the fine-tune it is gated against, so fine-tune-then-DPO
could never pass; it starts from the live checkpoint instead, which is also its reference."""

from __future__ import annotations

from machine.errors import MachineError
from machine.spec import VERSIONS_FILE, Version, read_book
from machine.training import Checkpoint
from machine.workspace import Workspace

from ._record import TRAINING_DIR, RecordFolder


def live_checkpoint(ws: Workspace, live: Version) -> Checkpoint | None:
    """The live version as a checkpoint to start from: the model its harness samples (a local
    ``BASE+ADAPTER``, a Tinker sampler path) and, from the training record that made it, the state it
    was saved with (what Tinker loads a training client from); None when the live model is its base."""
    if live.base_model is None or live.model == live.base_model:
        return None
    found = _saved(ws, live)
    return Checkpoint(
        model=live.model,
        base_model=live.base_model,
        step=found.step if found else 0,
        state=found.state if found else None,
    )


def live_checkpoint_of(ws: Workspace, name: str) -> Checkpoint | None:
    """``live_checkpoint`` of machine ``name``'s live version, read from its versions.json (None: it
    has none yet, so its model is its base)."""
    book = read_book(ws.machines_dir / name / VERSIONS_FILE)
    return None if book is None else live_checkpoint(ws, book.live)


def _saved(ws: Workspace, live: Version) -> Checkpoint | None:
    """The checkpoint the training behind ``live`` recorded, when its record is still there."""
    training = live.report.training if live.report is not None else None
    if training is None:
        return None
    try:
        record = RecordFolder.open(ws.data_dir / TRAINING_DIR, training.record).read()
    except MachineError:
        return None
    saved = record.checkpoint
    return saved if saved is not None and saved.model == live.model else None
