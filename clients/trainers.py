"""Trainers by name: one registry from a trainer's name to how it is made, the rule for the one used when
none is named, and a check of each trainer's extra before anything is spent.

A new trainer (DPO, RL) is one adapter module implementing ``machine.runs.Trainer`` and one entry here;
tests and plugins add theirs to ``TRAINERS``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from machine.errors import BadInputError, Fix
from machine.runs import LOCAL, Trainer

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
class TrainerEntry:
    """How to make one trainer: the factory, the extra that installs it with the modules that extra
    brings (all checked before the factory runs), and which base models it trains."""

    make: Callable[[TrainerRequest], Trainer]
    extra: str | None = None
    modules: tuple[str, ...] = ()
    trains: Callable[[str], bool] = lambda _base: True
    trains_what: str = ""
    """The base models it trains, in words, for the refusal of one it does not."""


def _tinker(request: TrainerRequest) -> Trainer:
    from .tinker import TinkerTrainer

    return TinkerTrainer(save_every=request.save_every)


def _local(request: TrainerRequest) -> Trainer:
    from .local_trainer import LocalTrainer

    return LocalTrainer(save_every=request.save_every, root=request.root)


TRAINERS: dict[str, TrainerEntry] = {
    "tinker": TrainerEntry(
        _tinker,
        extra="train",
        modules=("tinker", "tinker_cookbook", "tml_renderers"),
        trains=lambda base: not base.startswith(LOCAL),
        trains_what="models on Tinker's service",
    ),
    "local": TrainerEntry(
        _local,
        extra="local",
        modules=("torch", "transformers", "peft", "accelerate", "safetensors"),
        trains=lambda base: base.startswith(LOCAL),
        trains_what="local models (local:NAME or local:PATH)",
    ),
}
"""Every trainer by name."""


def default_trainer_name(base_model: str) -> str:
    """The trainer used when none is named: ``local`` for a ``local:`` model, else ``tinker``."""
    return "local" if base_model.startswith(LOCAL) else "tinker"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or a module blocked in sys.modules
        return False


def make_trainer(
    name: str | None, base_model: str, root: Path | None = None, *, save_every: int = SAVE_EVERY
) -> Trainer:
    """The trainer called ``name`` (default: see ``default_trainer_name``) for ``base_model``; one that
    does not train that model, or whose extra is not installed, is refused here, before anything is spent."""
    chosen = name or default_trainer_name(base_model)
    entry = TRAINERS.get(chosen)
    if entry is None:
        raise BadInputError(f"there is no trainer {chosen!r}; the trainers are: {', '.join(TRAINERS)}")
    if not entry.trains(base_model):
        other = default_trainer_name(base_model)
        raise BadInputError(
            f"the {chosen} trainer trains {entry.trains_what}, not {base_model!r}; the {other} trainer does",
            fixes=[Fix(argument="trainer", value=other)],
        )
    missing = [module for module in entry.modules if not _installed(module)]
    if missing and entry.extra is not None:
        raise BadInputError(
            f"the {chosen} trainer needs the {entry.extra} extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: pip install 'machine[{entry.extra}]'",
        )
    try:
        return entry.make(TrainerRequest(base_model, root, save_every))
    except ModuleNotFoundError as lost:
        raise BadInputError(
            f"the {chosen} trainer cannot be loaded ({lost}): pip install 'machine[{entry.extra or chosen}]'"
        ) from None
