"""What a machine is: its definition (machines and children, tools are in ``machine.runs``, rubrics in
``machine.grade``), its cases, how a workspace's machines folder is loaded, a machine as it was at a git
revision, and the versions book beside it.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._book import (
        INSTRUCTIONS_FILE,
        MODEL_FILE,
        UNRECORDED,
        VERSIONS_FILE,
        Book,
        Version,
        VersionStatus,
        files_of,
        identity_of,
        keep_texts,
        model_json,
        open_book,
        read_book,
        require_live,
        restore,
        sha256_text,
        snapshot,
        version_label,
        write_book,
    )
    from ._cases import MAX_DEPTH, Case, depth, load_cases
    from ._gate_report import (
        DEFAULT_MIN_Z,
        CriterionFigures,
        FixedGate,
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

_HOMES = {
    "INSTRUCTIONS_FILE": "._book",
    "MODEL_FILE": "._book",
    "UNRECORDED": "._book",
    "VERSIONS_FILE": "._book",
    "Book": "._book",
    "Version": "._book",
    "VersionStatus": "._book",
    "files_of": "._book",
    "identity_of": "._book",
    "keep_texts": "._book",
    "model_json": "._book",
    "open_book": "._book",
    "read_book": "._book",
    "require_live": "._book",
    "restore": "._book",
    "sha256_text": "._book",
    "snapshot": "._book",
    "version_label": "._book",
    "write_book": "._book",
    "MAX_DEPTH": "._cases",
    "Case": "._cases",
    "depth": "._cases",
    "load_cases": "._cases",
    "DEFAULT_MIN_Z": "._gate_report",
    "CriterionFigures": "._gate_report",
    "GateOutcome": "._gate_report",
    "FixedGate": "._gate_report",
    "GateReport": "._gate_report",
    "ReasonCount": "._gate_report",
    "SideFigures": "._gate_report",
    "TrainingSummary": "._gate_report",
    "count_reasons": "._gate_report",
    "BUILTIN_MACHINES": "._loader",
    "MachineLoader": "._loader",
    "discover": "._loader",
    "Counterpart": "._machine",
    "Machine": "._machine",
    "define_child": "._machine",
    "define_machine": "._machine",
    "instructions_from": "._machine",
    "model_from": "._machine",
    "Baseline": "._revision",
    "machine_at": "._revision",
    "MARK": "._trust",
    "TRUST_FILE": "._trust",
    "FileTrust": "._trust",
    "TrustBook": "._trust",
    "TrustState": "._trust",
    "marked": "._trust",
    "sha256_of": "._trust",
    "unreviewable": "._trust",
}
"""The module each public name is defined in."""

__all__ = [
    "BUILTIN_MACHINES",
    "DEFAULT_MIN_Z",
    "INSTRUCTIONS_FILE",
    "MARK",
    "MAX_DEPTH",
    "MODEL_FILE",
    "TRUST_FILE",
    "UNRECORDED",
    "VERSIONS_FILE",
    "Baseline",
    "Book",
    "Case",
    "Counterpart",
    "CriterionFigures",
    "FileTrust",
    "FixedGate",
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
    "depth",
    "discover",
    "files_of",
    "identity_of",
    "instructions_from",
    "keep_texts",
    "load_cases",
    "machine_at",
    "marked",
    "model_from",
    "model_json",
    "open_book",
    "read_book",
    "require_live",
    "restore",
    "sha256_of",
    "sha256_text",
    "snapshot",
    "unreviewable",
    "version_label",
    "write_book",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
