"""What one ``optimize`` call takes: every default and bound once, for the SDK, the command line and the
MCP tool alike. The upper bounds keep one call's work (and what a model calling the tool can ask for)
within reason."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import Field, model_validator

from machine.measure import MeasureOptions
from machine.spec import DEFAULT_MIN_Z, Case, checked_min_z

from .._options import MAX_TRIALS, Options

MAX_ROUNDS = 10
MAX_CANDIDATES = 8


class OptimizeOptions(Options):
    """The options of ``optimize``: how hard to search, and what to measure proposals on."""

    operation = "optimize"

    trials: int = Field(3, ge=1, le=MAX_TRIALS, strict=True, description="Runs per case.")
    rounds: int = Field(2, ge=1, le=MAX_ROUNDS, strict=True, description="Rounds of proposals.")
    candidates: int = Field(2, ge=1, le=MAX_CANDIDATES, strict=True, description="Proposals per round.")
    min_z: float = Field(
        DEFAULT_MIN_Z,
        ge=0,
        description="Standard errors a proposal's paired gain on the cases must reach to be kept.",
    )
    allow_weak_gate: bool = Field(
        False,
        description="Accept a min_z below 1: a gate that passes gains chance alone often gives.",
    )
    cases: str | Path | list[Case] | None = Field(
        None, description="Cases, in the machine's folder (default: cases.json)."
    )
    holdout: str | Path | list[Case] | None = Field(
        None,
        description="Held-out cases, in the machine's folder, never shown (default: holdout.json).",
    )
    optimizer_model: str | None = Field(
        None, description="The optimizer machine's model (default: its own, thinkingmachines/Inkling)."
    )
    allow_overlap: bool = Field(False, description="Keep a proposal that copies case text word for word.")
    concurrency: int = MeasureOptions.field("concurrency")
    pass_score: float = MeasureOptions.field("pass_score")
    seed: int = Field(0, strict=True, description="Seeds which failures each proposal sees.")
    model: str | None = Field(
        None, description="Measure the machine on this model instead of its live version's."
    )

    @model_validator(mode="after")
    def _gate_means_something(self) -> Self:
        """A min_z below 1 only when asked for (``checked_min_z``)."""
        checked_min_z(self.min_z, self.allow_weak_gate)
        return self
