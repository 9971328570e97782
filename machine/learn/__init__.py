"""Learning from runs, one room per learner: ``optimize`` rewrites a machine's instructions and keeps a
rewrite only when it measures better; ``train`` exports good runs and fine-tunes on them through a
trainer; ``specialize`` has the author machine write a child machine and its cases, vetted before any of
it is trusted; ``rl`` holds the pieces of reinforcement learning with the rubric as the reward (rewards,
group advantages, options, the priced plan), not yet a command. Each produces a pending candidate or a
report; one gate and one commit serve them all."""

from ._options import Options
from ._plan import Plan
from .optimize import Optimization, OptimizeOptions, OptimizeReport, optimize
from .specialize import RubricDraft, Specialization, SpecializeOptions, draft_rubric, specialize
from .specialize.vetting import Vetting
from .train import (
    ALL_SOURCES,
    ChooseSource,
    ExportOptions,
    ExportReport,
    Selection,
    Smoke,
    TagFilter,
    TrainingCheck,
    TrainingRecord,
    TrainingRow,
    TrainingShown,
    TrainOptions,
    check_training,
    export,
    train,
    training_rows,
    training_shown,
)

__all__ = [
    "ALL_SOURCES",
    "ChooseSource",
    "ExportOptions",
    "ExportReport",
    "Optimization",
    "OptimizeOptions",
    "OptimizeReport",
    "Options",
    "Plan",
    "RubricDraft",
    "Selection",
    "Smoke",
    "Specialization",
    "SpecializeOptions",
    "TagFilter",
    "TrainOptions",
    "TrainingCheck",
    "TrainingRecord",
    "TrainingRow",
    "TrainingShown",
    "Vetting",
    "check_training",
    "draft_rubric",
    "export",
    "optimize",
    "specialize",
    "train",
    "training_rows",
    "training_shown",
]
