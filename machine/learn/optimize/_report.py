"""What ``optimize`` found: every round's proposals with what each was shown, what it proposed, how it
measured on the cases and the held-out cases, the decision and why, and what each part cost."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AliasChoices, Field

from machine.runs import Model, now
from machine.spec import GateReport

ProposalOutcome = Literal["kept", "discarded", "not measured", "no proposal"]


class Cost(Model):
    """Dollars spent, by part: the machine's runs, their judges, and the optimizer's calls."""

    runs: float = 0.0
    judges: float = 0.0
    optimizer: float = 0.0

    @property
    def total(self) -> float:
        return self.runs + self.judges + self.optimizer

    def add(self, other: Cost) -> None:
        self.runs += other.runs
        self.judges += other.judges
        self.optimizer += other.optimizer


class Calls(Model):
    """How much work the search did: runs of the machine (made, reused, graded again) and of the optimizer."""

    new: int = 0
    reused: int = 0
    regraded: int = 0
    optimizer: int = 0
    live_new: int = 0
    """Of ``new``: runs of the live version that no stored run could stand for."""


class Copied(Model):
    """A case field a proposal copies word for word."""

    case_id: str = Field(validation_alias=AliasChoices("case_id", "case"))
    """The case's id (read as ``case`` from reports written before it had this name)."""
    field: str
    words: str


class Measured(Model):
    """One side's figures against the live version on one set of cases."""

    mean: float | None = None
    live_mean: float | None = None
    diff: float | None = None
    se: float | None = None
    z: float | None = None
    paired_cases: int = 0
    p_value: float | None = None
    """The exact sign test over the cases that changed (see the gate)."""
    outcome: str = ""
    decision: str = ""


class Proposal(Model):
    """One proposal: what the optimizer was shown and said, how it measured, and what was decided."""

    label: str
    round: int
    parent: str
    shown: list[str] = Field(default_factory=list)
    """The failing cases the optimizer was shown (ids)."""
    asked: int = 0
    """Optimizer calls made for it (a reply with no block is asked again)."""
    optimizer_runs: list[str] = Field(default_factory=list)
    instructions: str | None = None
    explanation: str = ""
    diff: str = ""
    """The proposal against the live version's own instructions, as a unified diff."""
    copied: list[Copied] = Field(default_factory=list)
    cases: Measured | None = None
    holdout: Measured | None = None
    outcome: ProposalOutcome = "no proposal"
    decision: str = ""
    cost: Cost = Field(default_factory=Cost)
    runs: list[str] = Field(default_factory=list, exclude=True)
    """The ids of its runs, to record them under the candidate's version when it is kept."""


class Round(Model):
    """One round: the instructions it built on, and the proposals it asked for."""

    number: int
    parent: str
    proposals: list[Proposal] = Field(default_factory=list)


class OptimizeReport(Model):
    """The whole search: settings, the live version's figures, each round, the result and the cost."""

    machine: str
    live: str
    optimizer: str
    optimizer_model: str
    model: str
    """The model the machine's runs were measured on."""
    cases_file: str
    cases: int
    holdout_file: str | None
    holdout_cases: int = 0
    trials: int
    rounds_asked: int
    candidates: int
    min_z: float
    allow_overlap: bool = False
    warnings: list[str] = Field(default_factory=list)
    live_cases_mean: float | None = None
    live_holdout_mean: float | None = None
    rounds: list[Round] = Field(default_factory=list)
    kept: str | None = None
    """The proposal written to instructions.md, if one was kept."""
    candidate: str | None = None
    """Its pending version (``v3``)."""
    diff: str = ""
    ended: str = ""
    """Why the search ended, in words."""
    stopped: str | None = None
    """Where and why refused work stopped it early (a budget), if it did."""
    cost: Cost = Field(default_factory=Cost)
    calls: Calls = Field(default_factory=Calls)
    gate: GateReport | None = None
    created_at: datetime = Field(default_factory=now)
