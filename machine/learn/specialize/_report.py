"""What ``machine specialize`` reports: each attempt at the child and why it was retried, what its checks
gave on the parent's sample runs, the cases kept and discarded with why, the spend of each part, where it
stopped if it did, and what to run next."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from .vetting import CaseVerdict, CheckResult


class Attempt(BaseModel):
    """One reply of the author for the child's files, and what became of it."""

    number: int
    run_id: str | None = None
    written: list[str] = Field(default_factory=list)
    """The files the reply carried."""
    problems: list[str] = Field(default_factory=list)
    """What was wrong with them (sent back to the author); empty when they were accepted."""
    second_look: list[str] = Field(default_factory=list)
    """Checks that may measure nothing, sent back once for a second look."""
    outcome: Literal["accepted", "unvetted", "sent back", "refused", "no reply"] = "refused"
    """``unvetted``: kept without being run, where the sandbox is not isolated (nothing can be vetted)."""
    seconds: float = 0.0
    """How long loading and checking the files took (in their own process)."""


class SpecializeCost(BaseModel):
    """What each part cost, in USD."""

    samples: float = 0.0
    """Runs of the parent made because it had no stored runs to try the checks on."""
    child: float = 0.0
    """The author's calls that wrote the child."""
    cases: float = 0.0
    """The author's calls that wrote the topics and the cases."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> float:
        return self.samples + self.child + self.cases


class Specialization(BaseModel):
    """The report of one ``specialize`` call."""

    parent: str
    child: str
    folder: str
    """The child's folder, relative to the workspace."""
    focus: str
    author: str
    author_model: str
    model: str | None = None
    """The child's own model, when one was asked for; else it keeps the parent's."""
    samples: list[str] = Field(default_factory=list)
    """The parent's runs the checks were tried on."""
    attempts: list[Attempt] = Field(default_factory=list)
    accepted: bool = False
    vetted: bool = False
    """Whether the child's code was loaded and its checks tried in an isolated sandbox before it was kept."""
    untrusted: list[str] = Field(default_factory=list)
    """The files of the child a model wrote, relative to the workspace: nothing imports them until the
    person reviews and trusts them (``machine trust CHILD``)."""
    checks: list[CheckResult] = Field(default_factory=list)
    """The accepted child's checks on the sample runs."""
    second_look: list[str] = Field(default_factory=list)
    """What was sent back for a second look, and what the second look left (empty: nothing was)."""
    written: list[str] = Field(default_factory=list)
    """Files written into the workspace, relative to it (nothing is committed to git)."""
    reused_cases: bool = False
    topics: list[str] = Field(default_factory=list)
    cases: list[CaseVerdict] = Field(default_factory=list)
    """Every case the author wrote, kept or discarded, with why."""
    kept_cases: int = 0
    holdout_cases: int = 0
    hidden_cases: int = 0
    check_seconds: float = 0.0
    """Time spent checking the author's cases (their tests run in sandboxes, several at once)."""
    seconds: float = 0.0
    cost: SpecializeCost = Field(default_factory=SpecializeCost)
    stopped: str | None = None
    """Where and why it stopped early (a refused budget, an author that never answered in shape)."""
    warnings: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
