"""Runs and scorecards: what one execution of a machine leaves behind.

Every field is plain data so a run survives a round trip through the store and through JSON
output unchanged. A criterion that could not be graded has ``score=None`` and a reason; it is
kept out of every mean.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def now() -> datetime:
    return datetime.now(UTC)


def new_run_id() -> str:
    """A readable id that sorts by creation time: ``20261130-084912-3f9a1c2b``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """One call the model asked for. ``arguments`` is None when the model's JSON did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None


class Message(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


class Usage(_Model):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @property
    def is_zero(self) -> bool:
        return not (self.input_tokens or self.cached_input_tokens or self.output_tokens)


class Timings(_Model):
    started_at: datetime = Field(default_factory=now)
    finished_at: datetime | None = None

    @property
    def seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class CriterionScore(_Model):
    """The grade of one criterion: a score in [0, 1], or None (UNSCORED) with the reason."""

    criterion: str
    weight: float
    grader: str
    score: float | None
    reason: str = ""
    cost_usd: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.score is not None


class Scorecard(_Model):
    rubric_fingerprint: str
    criteria: dict[str, CriterionScore]
    pass_score: float = 1.0
    graded_at: datetime = Field(default_factory=now)

    @property
    def score(self) -> float | None:
        """Weighted mean of the scored criteria; None when nothing could be scored."""
        scored = [c for c in self.criteria.values() if c.score is not None]
        total = sum(c.weight for c in scored)
        if not scored or total <= 0:
            return None
        return sum(c.weight * c.score for c in scored if c.score is not None) / total

    @property
    def passed(self) -> bool | None:
        score = self.score
        return None if score is None else score >= self.pass_score - 1e-9

    @property
    def unscored(self) -> list[str]:
        return [name for name, c in self.criteria.items() if c.score is None]

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.criteria.values())

    def with_pass_score(self, pass_score: float) -> Scorecard:
        return self.model_copy(update={"pass_score": pass_score})


class Tag(_Model):
    kind: Literal["good", "bad", "correction"]
    note: str | None = None
    at: datetime = Field(default_factory=now)


class Run(_Model):
    id: str = Field(default_factory=new_run_id)
    machine: str
    version: str | None = None
    revision: str | None = None
    library_version: str | None = None
    model: str
    harness: str
    effort: float | None = None
    """The reasoning effort the run asked for (Tinker's number); None: the endpoint's default."""
    instructions: str = ""
    input: str
    history: list[Message] = Field(default_factory=list)
    trajectory: list[Message] = Field(default_factory=list)
    output: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    stop_reason: str | None = None
    retries: list[dict[str, Any]] = Field(default_factory=list)
    timings: Timings = Field(default_factory=Timings)
    case_id: str | None = None
    case: dict[str, Any] | None = None
    trial: int | None = None
    conversation_id: str | None = None
    suite_id: str | None = None
    """The suite invocation that made this run (``machine suite``), so ``--resume`` finds its pairs."""
    scorecard: Scorecard | None = None
    tags: list[Tag] = Field(default_factory=list)

    @property
    def created_at(self) -> datetime:
        return self.timings.started_at

    @property
    def score(self) -> float | None:
        return None if self.scorecard is None else self.scorecard.score

    @property
    def passed(self) -> bool | None:
        return None if self.scorecard is None else self.scorecard.passed

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the model made during this run, in order."""
        return [call for message in self.trajectory for call in message.tool_calls]

    @property
    def tool_results(self) -> list[Message]:
        return [m for m in self.trajectory if m.role == "tool"]

    @property
    def reasoning(self) -> str:
        return "\n".join(m.reasoning for m in self.trajectory if m.reasoning)

    def summary(self) -> dict[str, Any]:
        """The stable row of ``machine runs --json``."""
        return {
            "id": self.id,
            "created_at": self.created_at.isoformat(),
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "cost_usd": self.cost_usd,
            "case": self.case_id,
            "model": self.model,
        }
