"""Harnesses, the agent loops that talk to models or replay them; trainers, which fine-tune them; and the
other backends (a PostgreSQL store, a Ray executor): each an adapter in its room, registered by name
through the ``machine.*`` entry points (``harnesses``, ``trainers``, ``stores``, ``ray``), and made
through the core's registries, which this package re-exports.

``echo`` and ``scripted`` run here with no model; ``local`` runs a model in this process (any
``local:...`` model id picks it when no harness is named); the remote harnesses need a key; ``opencode``
and ``pi`` run the agent loop in those programs, with the run's tools served to them from this process.
Trainers (``tinker``, ``local``) are found by name in ``TRAINERS``.
"""

from __future__ import annotations

# Imported by its path (``import clients`` from the repository root), this folder would load its modules
# a second time beside those of machine.clients, with a second copy of each class.
if __name__ != "machine.clients":
    raise ImportError(
        f"{__name__!r} is the folder of machine.clients, imported by its path: import machine.clients"
    )

from machine.runs import HARNESSES, HarnessEntry, HarnessSetup, default_harness_name, make_harness
from machine.training import TRAINERS, TrainerEntry, TrainerRequest, default_trainer_name, make_trainer

__all__ = [
    "HARNESSES",
    "TRAINERS",
    "HarnessEntry",
    "HarnessSetup",
    "TrainerEntry",
    "TrainerRequest",
    "default_harness_name",
    "default_trainer_name",
    "make_harness",
    "make_trainer",
]
