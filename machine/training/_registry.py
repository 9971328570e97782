"""Trainers by name (``machine._backends``' registry shape): the entry an adapter declares through the
``machine.trainers`` entry points, the rule for the one used when none is named, and the refusals, made
before anything is spent, of a trainer that does not train the model or whose extra is missing.

A new trainer (DPO, RL) is one adapter module implementing ``Trainer`` and one entry point naming its
``TrainerEntry``; a test or a program adds one at run time by assigning it in ``TRAINERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from machine._backends import TRAINER_GROUP, Backend, build, registry
from machine.errors import BadInputError, Fix

if TYPE_CHECKING:  # the registry is read without the training records (``machine list`` makes a workspace)
    from ._trainer import Trainer

SAVE_EVERY = 20
"""Steps between a trainer's saved states, so a stopped training resumes near where it stopped."""


@dataclass(frozen=True)
class TrainerRequest:
    """What a factory is given: the base model, the workspace root checkpoints are recorded relative to,
    and how often to save."""

    base_model: str
    root: Path | None = None
    save_every: int = SAVE_EVERY


@dataclass(frozen=True)
class TrainerEntry(Backend):
    """How to make one trainer: the factory, the extra that installs it with the modules that extra
    brings (all checked before the factory runs), and which base models it trains."""

    make: Callable[[TrainerRequest], Trainer]
    trains: Callable[[str], bool] = lambda _base: True
    trains_what: str = ""
    """The base models it trains, in words, for the refusal of one it does not."""


TRAINERS = registry(TRAINER_GROUP, TrainerEntry, "trainer")
"""Every trainer by name, from the ``machine.trainers`` entry points."""


def default_trainer_name(base_model: str) -> str:
    """The trainer used when none is named: the one that serves ``base_model`` (a ``local:`` model: the
    local trainer), else the one declared the default."""
    name = TRAINERS.serving(base_model)
    if name is None:
        raise BadInputError(f"no trainer is the default: name one of {', '.join(TRAINERS)}")
    return name


def make_trainer(
    name: str | None, base_model: str, root: Path | None = None, *, save_every: int = SAVE_EVERY
) -> Trainer:
    """The trainer called ``name`` (default: see ``default_trainer_name``) for ``base_model``; one that
    does not train that model, or whose extra is not installed, is refused here, before anything is spent."""
    chosen = name or default_trainer_name(base_model)
    if chosen not in TRAINERS:
        raise BadInputError(f"there is no trainer {chosen!r}; the trainers are: {', '.join(TRAINERS)}")
    entry = TRAINERS[chosen]
    if not entry.trains(base_model):
        other = default_trainer_name(base_model)
        raise BadInputError(
            f"the {chosen} trainer trains {entry.trains_what}, not {base_model!r}; the {other} trainer does",
            fixes=[Fix(argument="trainer", value=other)],
        )
    return build("trainer", chosen, entry, lambda: entry.make(TrainerRequest(base_model, root, save_every)))


__all__ = [
    "SAVE_EVERY",
    "TRAINERS",
    "TrainerEntry",
    "TrainerRequest",
    "default_trainer_name",
    "make_trainer",
]
