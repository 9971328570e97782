"""What a training on Tinker saves, and under which names: the state to resume from (weights and Adam's
moments, ``tinker://…/weights/NAME``) and the weights a harness samples (``tinker://…/sampler_weights/
NAME``), both named for the training's folder and the step, so the two saves of one step sit side by side
and DPO can find a live checkpoint's state beside its sampler weights. Supervised, preference and RL
training save alike, every call through the trainer's ``_call``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from machine.training import Checkpoint

from ._calls import Caller

STATE_SCHEME = "tinker://"
"""Where every state Tinker saves lives: the only states this trainer resumes from."""


def checkpoint_name(folder: Path, step: int) -> str:
    """A name Tinker accepts for a save: the training's folder name and the step."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.name).strip("-.") or "machine"
    return f"{base}-step{step}"


async def save_state(
    trainer: Caller, client: Any, folder: Path, base_model: str, step: int, saved: Checkpoint | None
) -> Checkpoint:
    """The training state after ``step``, saved to resume from."""
    name = checkpoint_name(folder, step)
    (reply,) = await trainer._call(
        f"saving the training state after step {step}",
        lambda: [client.save_state(name)],
        step=step,
        saved=saved,
    )
    path = str(reply.path)
    return Checkpoint(model=path, base_model=base_model, step=step, state=path)


async def save_sampler(
    trainer: Caller, client: Any, folder: Path, base_model: str, step: int, state: Checkpoint | None
) -> Checkpoint:
    """The weights after ``step``, saved for sampling: the checkpoint a harness samples, with ``state``
    (saved after the same step) to resume from."""
    name = checkpoint_name(folder, step)
    (reply,) = await trainer._call(
        f"saving the sampler weights after step {step}",
        lambda: [client.save_weights_for_sampler(name)],
        step=step,
        saved=state,
    )
    kept = state.state if state is not None and state.step == step else None
    return Checkpoint(model=str(reply.path), base_model=base_model, step=step, state=kept)
