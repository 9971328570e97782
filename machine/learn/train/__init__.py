"""Train: select a machine's good runs (current rubric, never a held-out case), export them as chat
JSONL or fine-tune on them with a trainer (an adapter behind ``machine.training.Trainer``), record what went
in, and propose the checkpoint as a pending candidate gated on the held-out cases."""

from ._check import Smoke, TrainingCheck, check_training
from ._export import export, iter_rows, rows_of
from ._export_report import ExportReport, FunnelStep
from ._options import ExportOptions, TrainOptions
from ._plan import plan_train
from ._prepare import ALL_SOURCES, ChooseSource, MakeTrainer
from ._record import RecordFolder, TrainingRecord
from ._record_views import TrainingRow, TrainingShown, training_rows, training_shown
from ._run_example import example_of
from ._sampling import pending
from ._select import Funnel, Selection, TagFilter
from ._targets import failed_steps
from ._train import train

__all__ = [
    "ALL_SOURCES",
    "ChooseSource",
    "ExportOptions",
    "ExportReport",
    "Funnel",
    "FunnelStep",
    "MakeTrainer",
    "RecordFolder",
    "Selection",
    "Smoke",
    "TagFilter",
    "TrainOptions",
    "TrainingCheck",
    "TrainingRecord",
    "TrainingRow",
    "TrainingShown",
    "check_training",
    "example_of",
    "export",
    "failed_steps",
    "iter_rows",
    "pending",
    "plan_train",
    "rows_of",
    "train",
    "training_rows",
    "training_shown",
]
