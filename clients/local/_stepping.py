"""What each local training shares around its steps: running each piece of blocking work in a worker
thread (a cancel waits for it; a failure that is not the person's becomes a TrainingError carrying the
last saved state), waiting out a step in flight, and the saved state to resume from, read only from
inside the workspace."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread

from machine.errors import BadInputError, MachineError, TrainingError
from machine.runs import confined
from machine.training import Checkpoint

RECORDED_IN = "checkpoints.jsonl"
"""The training record's file a state to resume from is read from (``train`` reads it there)."""


def waited(lock: threading.Lock) -> None:
    """Returns once no step or save holds ``lock``."""
    with lock:
        return


def resume_state(resume: Checkpoint | None, total: int, root: Path | None, folder: Path) -> Path | None:
    """The saved state to resume from, which must lie in the workspace (the training's folder when the
    workspace is not known): a record naming a state elsewhere is refused, not loaded."""
    if resume is None:
        return None
    if resume.state is None:
        raise BadInputError(f"checkpoint {resume.model!r} saved no training state to resume from")
    if resume.step > total:
        raise BadInputError(f"cannot resume at step {resume.step}: this training has {total} steps")
    named_in = folder / RECORDED_IN
    return confined(resume.state, root or folder, named_in=named_in, what="the training state")


async def off_loop(work: Callable[[], Any], what: str, step: int, saved: Checkpoint | None) -> Any:
    """``work`` in a worker thread (a cancel waits for it, then stops the training there); a failure that is
    not the person's to fix becomes a TrainingError carrying the last saved state."""
    try:
        return await anyio.to_thread.run_sync(work)
    except MachineError:
        raise
    except Exception as error:
        label = {"starting": "starting the local training", "step": f"training step {step}"}.get(
            what, f"saving the training state after step {step}"
        )
        raise TrainingError(
            f"{label} failed: {type(error).__name__}: {error}", step=step, checkpoint=saved
        ) from error
