"""What a machine is: its definition (machines and children, tools are in ``machine.runs``, rubrics in
``machine.grade``), its cases, how a workspace's machines folder is loaded, a machine as it was at a git
revision, and the versions book beside it."""

from ._book import (
    UNRECORDED,
    Book,
    Version,
    VersionStatus,
    identity_of,
    open_book,
    version_label,
)
from ._cases import Case, load_cases
from ._gate_report import (
    DEFAULT_MIN_Z,
    CriterionFigures,
    GateOutcome,
    GateReport,
    ReasonCount,
    SideFigures,
    TrainingSummary,
    count_reasons,
)
from ._loader import BUILTIN_MACHINES, MachineLoader, discover
from ._machine import Counterpart, Machine, define_child, define_machine, instructions_from, model_from
from ._revision import Baseline, machine_at
from ._trust import MARK, TRUST_FILE, FileTrust, TrustBook, TrustState, marked, sha256_of, unreviewable

__all__ = [
    "BUILTIN_MACHINES",
    "DEFAULT_MIN_Z",
    "MARK",
    "TRUST_FILE",
    "UNRECORDED",
    "Baseline",
    "Book",
    "Case",
    "Counterpart",
    "CriterionFigures",
    "FileTrust",
    "GateOutcome",
    "GateReport",
    "Machine",
    "MachineLoader",
    "ReasonCount",
    "SideFigures",
    "TrainingSummary",
    "TrustBook",
    "TrustState",
    "Version",
    "VersionStatus",
    "count_reasons",
    "define_child",
    "define_machine",
    "discover",
    "identity_of",
    "instructions_from",
    "load_cases",
    "machine_at",
    "marked",
    "model_from",
    "open_book",
    "sha256_of",
    "unreviewable",
    "version_label",
]
