"""What a trainer is given and gives back: the ``Trainer`` protocol that every training adapter implements
(``machine.clients``' tinker and local trainers), its settings and plan, the examples it trains on, the
per-step metrics and checkpoints it reports, what a trainer that learns by RL offers (``RLSession``),
the learning-rate schedules and epoch order they share, and the trainers by name (``TRAINERS``,
``make_trainer``).

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._example import TrainExample
    from ._registry import (
        SAVE_EVERY,
        TRAINERS,
        TrainerEntry,
        TrainerRequest,
        default_trainer_name,
        make_trainer,
    )
    from ._rl import RLSettings, RLStepMetrics, RLUpdate
    from ._rl_session import RLSession, RLTrainer
    from ._trainer import (
        Checkpoint,
        LrSchedule,
        Method,
        Phase,
        Prepared,
        StepMetrics,
        Trainer,
        TrainingPlan,
        TrainSettings,
        epoch_batches,
        epoch_order,
        learning_rate_at,
        refuse_untaken,
    )

_HOMES = {
    "Checkpoint": "._trainer",
    "LrSchedule": "._trainer",
    "Method": "._trainer",
    "Phase": "._trainer",
    "Prepared": "._trainer",
    "StepMetrics": "._trainer",
    "TrainExample": "._example",
    "RLSession": "._rl_session",
    "RLSettings": "._rl",
    "RLStepMetrics": "._rl",
    "RLTrainer": "._rl_session",
    "RLUpdate": "._rl",
    "SAVE_EVERY": "._registry",
    "TRAINERS": "._registry",
    "TrainerEntry": "._registry",
    "TrainerRequest": "._registry",
    "default_trainer_name": "._registry",
    "make_trainer": "._registry",
    "TrainSettings": "._trainer",
    "Trainer": "._trainer",
    "TrainingPlan": "._trainer",
    "epoch_batches": "._trainer",
    "epoch_order": "._trainer",
    "learning_rate_at": "._trainer",
    "refuse_untaken": "._trainer",
}
"""The module each public name is defined in."""

__all__ = [
    "SAVE_EVERY",
    "TRAINERS",
    "Checkpoint",
    "LrSchedule",
    "Method",
    "Phase",
    "Prepared",
    "RLSession",
    "RLSettings",
    "RLStepMetrics",
    "RLTrainer",
    "RLUpdate",
    "StepMetrics",
    "TrainExample",
    "TrainSettings",
    "Trainer",
    "TrainerEntry",
    "TrainerRequest",
    "TrainingPlan",
    "default_trainer_name",
    "epoch_batches",
    "epoch_order",
    "learning_rate_at",
    "make_trainer",
    "refuse_untaken",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
