"""Every trainer this package ships, as the entries its ``machine.trainers`` entry points name: the
factory, the extra with that extra's modules (checked before anything is spent), which base models each
trains and which it serves. Light to import: each factory imports its room when it runs.

A new trainer (DPO, RL) is one adapter module implementing ``machine.training.Trainer`` and one
``TrainerEntry`` with its entry point; tests and programs add theirs to ``TRAINERS`` at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine.budget import LOCAL
from machine.training import SAVE_EVERY, TrainerEntry, TrainerRequest

if TYPE_CHECKING:
    from machine.training import Trainer


def _tinker(request: TrainerRequest) -> Trainer:
    from .tinker import TinkerTrainer

    return TinkerTrainer(save_every=request.save_every)


def _local(request: TrainerRequest) -> Trainer:
    from .local.trainer import LocalTrainer

    return LocalTrainer(save_every=request.save_every, root=request.root)


TINKER = TrainerEntry(
    _tinker,
    extra="train",
    modules=("tinker", "tinker_cookbook", "tml_renderers"),
    trains=lambda base: not base.startswith(LOCAL),
    trains_what="models on Tinker's service",
    order=10,
    default=True,
    makes="machine.clients.tinker:TinkerTrainer",
)
"""Fine-tunes a model on Tinker's service: the default trainer."""
LOCAL_MODELS = TrainerEntry(
    _local,
    extra="local",
    modules=("torch", "transformers", "peft", "accelerate", "safetensors"),
    trains=lambda base: base.startswith(LOCAL),
    trains_what="local models (local:NAME or local:PATH)",
    serves=LOCAL,
    order=20,
    makes="machine.clients.local.trainer:LocalTrainer",
)
"""Fine-tunes a local model in this process: the trainer of every ``local:`` model."""

__all__ = ["LOCAL_MODELS", "SAVE_EVERY", "TINKER"]
