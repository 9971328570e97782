"""What one optimize call works on and what it has found so far: the state of a search, which the
decisions on its proposals and its result read without needing the search's rounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from machine.spec import Case, Machine, Version
from machine.workspace import Workspace

from ._measured_instructions import Arm, Measure
from ._report import OptimizeReport


@dataclass
class SearchState:
    """One optimize call: what it works on, and what it found so far."""

    ws: Workspace
    spec: Machine
    live: Version
    optimizer: Machine
    optimizer_model: str
    cases: list[Case]
    holdout: list[Case] | None
    measure: Measure
    report: OptimizeReport
    candidates: int
    shown: int
    passes_shown: int
    allow_overlap: bool
    seed: int
    arms: dict[str, Arm] = field(default_factory=dict)

    @property
    def base(self) -> Arm:
        """The live version's arm, measured first."""
        return self.arms[self.live.label]
