"""Learning from runs: ``optimize`` rewrites a machine's instructions with the built-in optimizer machine
and keeps a rewrite only when it is measured better on the cases and no worse on held-out ones;
``export`` writes good runs as chat JSONL; a ``Trainer`` (``TinkerTrainer``) fine-tunes on them;
``specialize`` has the built-in author machine write a child machine and its cases, none of it trusted
until it is loaded in a process of its own and checked (project cases run in sandboxes)."""

from ._authoring import AUTHOR
from ._blocks import Reply, read_reply
from ._case_blocks import read_cases
from ._case_shape import CaseShape, case_shape
from ._case_split import split_cases
from ._case_vet import CaseVerdict, CaseVetting, vet_cases
from ._draft_rubric import RubricDraft, draft_rubric
from ._export import ExportReport, FunnelStep, export, iter_rows, rows_of
from ._optimize import OPTIMIZER, optimize
from ._overlap import Overlap, overlaps
from ._record import RecordFolder, TrainingRecord
from ._render import format_optimization
from ._report import Calls, Copied, Cost, Measured, OptimizeReport, Proposal, ProposalOutcome, Round
from ._result import Optimization
from ._select import Funnel, Selection, TagFilter
from ._specialize import specialize
from ._specialize_render import format_rubric_draft, format_specialization
from ._specialize_report import Attempt, Specialization, SpecializeCost
from ._tinker import TinkerTrainer
from ._tinker_render import Rendering
from ._train import train, trainer_for
from ._trainer import (
    Checkpoint,
    Prepared,
    StepMetrics,
    Trainer,
    TrainExample,
    TrainSettings,
    example_of,
    failed_steps,
)
from ._vet import vet_child
from ._vetting import CheckResult, SampleScore, Vetting

__all__ = [
    "AUTHOR",
    "OPTIMIZER",
    "Attempt",
    "Calls",
    "CaseShape",
    "CaseVerdict",
    "CaseVetting",
    "CheckResult",
    "Checkpoint",
    "Copied",
    "Cost",
    "ExportReport",
    "Funnel",
    "FunnelStep",
    "Measured",
    "Optimization",
    "OptimizeReport",
    "Overlap",
    "Prepared",
    "Proposal",
    "ProposalOutcome",
    "RecordFolder",
    "Rendering",
    "Reply",
    "Round",
    "RubricDraft",
    "SampleScore",
    "Selection",
    "Specialization",
    "SpecializeCost",
    "StepMetrics",
    "TagFilter",
    "TinkerTrainer",
    "TrainExample",
    "TrainSettings",
    "Trainer",
    "TrainingRecord",
    "Vetting",
    "case_shape",
    "draft_rubric",
    "example_of",
    "export",
    "failed_steps",
    "format_optimization",
    "format_rubric_draft",
    "format_specialization",
    "iter_rows",
    "optimize",
    "overlaps",
    "read_cases",
    "read_reply",
    "rows_of",
    "specialize",
    "split_cases",
    "train",
    "trainer_for",
    "vet_cases",
    "vet_child",
]
