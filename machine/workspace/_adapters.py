"""What a workspace takes from outside the core, as factories ``machine.ops`` composes by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from machine.runs import Harness, ModelAccess, Sandboxes
    from machine.training import Trainer


@dataclass(frozen=True)
class Adapters:
    """Factories for what a workspace takes from outside the core, each called once, on first use: the
    harness, the judges' model access (given the harness, whose endpoint they may share) and sandboxes;
    and the trainer a training makes by name (``trainer(name, base_model, root)``; None: the registered
    trainers' ``machine.training.make_trainer``)."""

    harness: Callable[[], Harness] | None = None
    models: Callable[[Harness | None], ModelAccess] | None = None
    sandboxes: Callable[[], Sandboxes] | None = None
    harness_name: Callable[[str | None], str] | None = None
    """The name of the harness ``harness`` would make for runs of a model, without making it."""
    trainer: Callable[[str | None, str, Path], Trainer] | None = None
