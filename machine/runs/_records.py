"""Runs and scorecards: what one execution of a machine leaves behind.

Plain data, so a run survives a round trip through the store and through JSON unchanged. Derived
values (a scorecard's weighted ``score`` and ``passed``) are computed fields: in every dump, ignored
when a dump is read back. An UNSCORED criterion has ``score=None`` and a reason, and stays out of
every mean.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, computed_field

from machine._data import Derived, Record
from machine.budget import Usage
from machine.errors import BadInputError

PASS_TOLERANCE = 1e-9
"""A weighted mean that should equal the pass score can land a rounding error below it."""


def now() -> datetime:
    """The current time, in UTC: every timestamp the product records."""
    return datetime.now(UTC)


def timestamp(moment: datetime) -> str:
    """``moment`` in the one form every face prints (as a model's dump does): ISO 8601 in UTC, with Z."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 run``, ``3 runs``, ``2 batches`` (given its ``plural``): every count a person reads."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def passes(score: float, pass_score: float) -> bool:
    """Whether ``score`` reaches ``pass_score``: the one pass test of runs, criteria and reports."""
    return score >= pass_score - PASS_TOLERANCE


def checked_score(value: float, argument: str = "pass_score") -> float:
    """``value`` if it is a score a run can reach, in [0, 1]; else an error naming ``argument`` (a pass
    score of 2 would fail every run, one of -1 pass every run, and either would be stored with them)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise BadInputError(f"{argument} {value!r} is not a score: give a number from 0 to 1 (1: full marks)")
    return float(value)


def new_run_id() -> str:
    """A readable id that sorts by creation time: ``20261130-084912-3f9a1c2b5e6d7f80``. Sixty-four random
    bits: a suite making thousands of runs a second never makes the same id twice (an id the store already
    has would replace that run)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(8).hex()


class ToolCall(Record):
    """One call the model asked for. ``arguments`` is None when the model's JSON did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None


class EditRecord(Record):
    """A change to the person's own files that a tool proposed, and what became of it (``_edits``): kept
    on the tool's result in the run's trajectory."""

    tool: str
    path: str | None = None
    command: str | None = None
    diff: str
    """The diff or command line the person was shown, cut to ``DIFF_CHARS``."""
    decision: Literal["approved", "declined"]
    by: str
    """Who decided: ``terminal``, ``elicitation``, ``sdk``, ``all`` (an earlier "all" in this run),
    ``timeout`` (nobody answered in time), or ``policy`` (``--edits deny``, or nobody to ask)."""
    at: datetime = Field(default_factory=now)


class Message(Record):
    """One message of a run: the input, an assistant turn (text, reasoning, tool calls) or a tool result
    (with the changes it proposed to the person's files and their answers, ``edits``)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    edits: list[EditRecord] = Field(default_factory=list)


class Timings(Record):
    """When a run started and finished."""

    started_at: datetime = Field(default_factory=now)
    finished_at: datetime | None = None

    @property
    def seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class CriterionScore(Record):
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


def weighted_score(criteria: Iterable[CriterionScore]) -> float | None:
    """The weighted mean of the scored criteria, UNSCORED ones left out; None when none was scored or their
    weights sum to nothing. A plain function (the scorecard's computed fields call it) so that it can be
    tested and mutated on its own."""
    scored = [(c.weight, c.score) for c in criteria if c.score is not None]
    total = sum(weight for weight, _ in scored)
    if not scored or total <= 0:
        return None
    return sum(weight * score for weight, score in scored) / total


def verdict(score: float | None, pass_score: float) -> bool | None:
    """Pass or fail for a score alone; None when there is no score to judge."""
    return None if score is None else passes(score, pass_score)


def decided(grades: Iterable[tuple[float, float | None]], pass_score: float) -> bool | None:
    """Pass or fail for grades of (weight, score or None), decided only by what was scored.

    The weighted score leaves UNSCORED criteria out, so it cannot claim a pass they might still lose: a
    run passes when it reaches ``pass_score`` even with every UNSCORED criterion at 0, fails when it falls
    short even with every one at full marks, and is undecided (None) between the two, or when nothing was
    scored. With every criterion scored this is the weighted score against ``pass_score``, as before."""
    weights = scored = got = 0.0
    for weight, score in grades:
        weights += weight
        if score is not None:
            scored += weight
            got += weight * score
    if scored <= 0:
        return None
    if passes(got / weights, pass_score):  # the least the UNSCORED criteria could leave it
        return True
    if not passes((got + weights - scored) / weights, pass_score):  # the most they could lift it to
        return False
    return None


class Scorecard(Derived):
    """Every criterion's grade of one run, under the rubric with ``rubric_fingerprint``."""

    rubric_fingerprint: str
    criteria: dict[str, CriterionScore]
    pass_score: float = 1.0
    graded_at: datetime = Field(default_factory=now)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score(self) -> float | None:
        """Weighted mean of the scored criteria; None when nothing could be scored."""
        return weighted_score(self.criteria.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool | None:
        """Whether the run passed, as far as what was scored decides it (``decided``); None when nothing
        could be scored or an UNSCORED criterion could still turn it."""
        return self.passed_at(self.pass_score)

    def passed_at(self, pass_score: float) -> bool | None:
        """``passed`` against another pass score (a gate's, a suite's)."""
        return decided(((c.weight, c.score) for c in self.criteria.values()), pass_score)

    @property
    def unscored(self) -> list[str]:
        """The criteria that came back UNSCORED."""
        return [name for name, c in self.criteria.items() if c.score is None]

    @property
    def weights(self) -> tuple[float, float]:
        """(the weight scored, the rubric's whole weight): what the score was measured on."""
        grades = self.criteria.values()
        return sum(c.weight for c in grades if c.score is not None), sum(c.weight for c in grades)

    @property
    def cost_usd(self) -> float:
        """What grading cost (the judges' calls)."""
        return sum(c.cost_usd for c in self.criteria.values())

    def with_pass_score(self, pass_score: float) -> Scorecard:
        """The same grades judged against another pass score."""
        return self.model_copy(update={"pass_score": pass_score})


class Tag(Record):
    """A person's mark on a run: good, bad, or a correction with a note."""

    kind: Literal["good", "bad", "correction"]
    note: str | None = None
    answer: str | None = None
    """For ``good``: the final answer to learn instead of the run's own (``/good --as TEXT``)."""
    trace: bool = False
    """For ``good``: learn the run's whole trajectory, tool calls and results (behaviour cloning), not only
    its input and final answer (``/good --trace``)."""
    reasoning: bool = False
    """For ``good``: keep the run's thinking with what is learned (``/good --reasoning``)."""
    at: datetime = Field(default_factory=now)

    @property
    def verdict(self) -> bool:
        """Whether the tag is a verdict on the run (good or bad): a run has one at most."""
        return self.kind in ("good", "bad")


def retagged(tags: list[Tag], tag: Tag) -> list[Tag]:
    """``tags`` with ``tag`` added: a verdict (good or bad) replaces the run's earlier one, whichever it
    was, so a run is never both; corrections add up."""
    return [*(t for t in tags if not (tag.verdict and t.verdict)), tag]


class Run(Derived):
    """One execution of a machine: what went in, every step, what came out, what it cost, its grade."""

    id: str = Field(default_factory=new_run_id)
    machine: str
    version: str | None = None
    revision: str | None = None
    library_version: str | None = None
    model: str
    harness: str
    setup: str | None = None
    """What else the run depended on (``setup_of``: the script, endpoint or model files, by hash or URL);
    None: nothing more, or a run stored before it was kept. Stored runs are reused only under the same."""
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
    observed: bool = False
    """Made for an outside host through ``machine serve`` while the workspace observes: stored unlabeled
    (finishing is no sign it was good) for a person to review, tag or correct."""
    forked_from: str | None = None
    """The run this one re-ran with a person's correction added to its input (``machine fork``)."""
    correction: str | None = None
    """That correction, as the person wrote it."""
    sampled_for: str | None = None
    """The RL training that sampled this run from its policy as it was learning (``RECORD step N``): a
    training sample, not a run of the model as named, so it is never reused for measuring nor selected
    as a good run to copy unless a person marked it good (or an export asks for samples)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def created_at(self) -> datetime:
        """When the run started: a run's JSON names it as a listed run's (``RunSummary``) does."""
        return self.timings.started_at

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score(self) -> float | None:
        """The scorecard's weighted score; None when ungraded or nothing was scored."""
        return None if self.scorecard is None else self.scorecard.score

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool | None:
        """Whether the scorecard passed; None when ungraded or nothing was scored."""
        return None if self.scorecard is None else self.scorecard.passed

    @property
    def verdict(self) -> Tag | None:
        """The person's last good or bad mark on the run (one replaces the other; older stores may
        hold both, and then the last counts)."""
        return next((t for t in reversed(self.tags) if t.verdict), None)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the model made during this run, in order."""
        return [call for message in self.trajectory for call in message.tool_calls]

    @property
    def tool_results(self) -> list[Message]:
        """Every tool result of this run, in order."""
        return [m for m in self.trajectory if m.role == "tool"]

    @property
    def reasoning(self) -> str:
        """The reasoning of every assistant turn, joined."""
        return "\n".join(m.reasoning for m in self.trajectory if m.reasoning)
