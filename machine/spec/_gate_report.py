"""What the promotion gate found, as ``versions.json`` keeps it beside a candidate: each side's figures
and where its runs ran (harness, model, endpoint), each criterion before and after with its UNSCORED
grades and why, and the decision. A criterion scored on fewer than ``COVERAGE`` of the cases on a side
(none at all, or a few while the rest came back UNSCORED) was not measured there, and the decision is
then "not measured", never "passed"; too few cases that changed is "not enough evidence"."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from machine.errors import BadInputError, Fix
from machine.runs import Record, now
from machine.training import TrainingPlan

DEFAULT_MIN_Z = 2.0
WEAK_Z = 1.0
"""A ``min_z`` below this passes gains chance alone gives about one time in six: refused unless the
caller allows a weak gate (``checked_min_z``)."""
COVERAGE = 0.8
"""The share of the cases each side must have a scored run of (a failed run counts, as a 0), and each
criterion a scored grade on, on each side: below it, it was not measured there (5 of 6 cases, 8 of 10)."""
GateOutcome = Literal["passed", "not passed", "not measured", "not enough evidence"]
"""The gate's decision: only "passed" may be committed without ``force``."""
REASONS_KEPT = 3
"""A criterion's most common UNSCORED reasons kept per side (the count covers them all)."""
MAX_LOSSES = 240
"""The most per-step losses a report keeps."""
REASON_CHARS = 200
"""A reason is kept as one line of at most this many characters."""


def needed_cases(cases: int) -> int:
    """How many of ``cases`` a side, and each criterion on it, must be scored on."""
    return math.ceil(COVERAGE * cases - 1e-9)


def checked_min_z(min_z: float, allow_weak_gate: bool = False) -> float:
    """``min_z`` if the gate it sets means something: not negative, and at least ``WEAK_Z`` unless
    ``allow_weak_gate`` (a gain of half a standard error is what chance gives a third of the time)."""
    if min_z < 0:
        raise BadInputError(f"min_z must not be negative, got {min_z:g}", fixes=[Fix("min_z", "2")])
    if min_z < WEAK_Z and not allow_weak_gate:
        raise BadInputError(
            f"min_z {min_z:g} is below {WEAK_Z:g}: a gate that passes a gain of fewer than {WEAK_Z:g} "
            f"standard errors passes what chance alone gives about one time in {1 / _chance(min_z):.0f}",
            fixes=[
                Fix("min_z", f"{DEFAULT_MIN_Z:g}", "for the usual gate"),
                Fix("allow_weak_gate", None, "to use the weak gate anyway"),
            ],
        )
    return min_z


def _chance(z: float) -> float:
    """The one-sided chance of a gain of at least ``z`` standard errors from chance alone."""
    return 0.5 * math.erfc(z / math.sqrt(2))


class ReasonCount(Record):
    """One reason grades came back UNSCORED, and how many times it came."""

    reason: str
    count: int


def count_reasons(reasons: Iterable[str], keep: int | None = REASONS_KEPT) -> list[ReasonCount]:
    """The ``keep`` most common reasons, commonest first (ties in the order first seen), each as one
    line cut to REASON_CHARS; an empty reason counts as "no reason given"."""
    counted = Counter(_one_line(reason) for reason in reasons)
    return [ReasonCount(reason=reason, count=count) for reason, count in counted.most_common(keep)]


def _one_line(reason: str) -> str:
    text = " ".join(reason.split()) or "no reason given"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


class SideFigures(Record):
    """One version's runs on the held-out cases."""

    version: str
    model: str
    harness: str | None = None
    """The harness its runs ran on (None: a report written before it was kept, which says nothing of
    where it was measured)."""
    endpoint: str | None = None
    """The endpoint that harness called (None: a harness that calls none, or not recorded)."""
    runs: int = 0
    """Runs counted (reused and new), failed ones included."""
    reused: int = 0
    """Stored runs of this version reused, graded under the current rubric."""
    regraded: int = 0
    """Stored runs reused after grading them again with the current evaluator."""
    new: int = 0
    """Runs made for this proposal."""
    errors: int = 0
    unscored: int = 0
    """Runs with no scored criterion (left out of the figures)."""
    unscored_grades: int = 0
    """Criterion grades that came back UNSCORED, over every graded run (each criterion's are in its
    figures)."""
    mean: float | None = None
    pass_rate: float | None = None
    cases_scored: int | None = None
    """Cases with a scored run on this side (a failed run counts, as a 0); None in older reports."""


class CriterionFigures(Record):
    """One criterion's mean and pass rate over its scored grades, before (live) and after (candidate),
    with its UNSCORED grades counted apart and their commonest reasons. A mean of None on a side: no
    grade of it was scored there, so it was not measured there."""

    weight: float | None = None
    """The criterion's weight in the rubric (None in reports written before it was kept)."""
    before: float | None = None
    after: float | None = None
    before_pass_rate: float | None = None
    after_pass_rate: float | None = None
    unscored_before: int = 0
    unscored_after: int = 0
    unscored_reasons_before: list[ReasonCount] = Field(default_factory=list)
    unscored_reasons_after: list[ReasonCount] = Field(default_factory=list)
    cases_before: int | None = None
    """The cases this criterion was scored on, on the live side (a failed run counts, as a 0); None in
    reports written before it was kept."""
    cases_after: int | None = None
    """The same on the candidate's side."""
    diff: float | None = None
    """The mean over cases of the candidate's per-case mean minus the live version's (None: no case
    graded on both sides, or a report written before it was kept)."""
    se: float | None = None
    z: float | None = None
    paired_cases: int = 0
    held: bool = False
    """Whether the gate held the candidate to it (marked required, or none was and every one is)."""
    worse: bool = False
    """Held, and fell by ``min_z`` standard errors or more (or on every case alike): the candidate is
    refused for it."""

    @property
    def measured_before(self) -> bool:
        return self.before is not None

    @property
    def measured_after(self) -> bool:
        return self.after is not None

    def thin(self, after: bool, side: SideFigures, need: int) -> bool:
        """Whether this criterion was scored on fewer than ``need`` cases on a side (the candidate's if
        ``after``) that was itself scored on enough (a side short of cases is reported as such)."""
        cases = self.cases_after if after else self.cases_before
        enough = side.cases_scored is None or side.cases_scored >= need
        return cases is not None and cases < need and enough


class TrainingSummary(Record):
    """What a candidate ``train`` made was trained on and how training went."""

    record: str
    """The training record's id (``.machine/training/<id>/``)."""
    trainer: str
    base_model: str
    renderer: str = ""
    sampled: int = 0
    """Runs made for training (``samples``)."""
    runs: int = 0
    """Runs selected to learn from."""
    examples: int = 0
    sequences: int = 0
    whole_run: int = 0
    per_step: int = 0
    tokens: int = 0
    target_tokens: int = 0
    epochs: int = 0
    steps: int = 0
    learning_rate: float = 0.0
    first_loss: float | None = None
    last_loss: float | None = None
    seconds: float = 0.0
    """The wall time of the steps this call trained (a resumed training's since it resumed)."""
    cost_usd: float = 0.0
    resumed_at: int | None = None
    """The step a resumed training went on from (None: it was not resumed)."""
    redacted: int = 0
    """Secrets replaced by a marker in the examples (keys, tokens, passwords the runs read or wrote)."""
    plan: TrainingPlan | None = None
    """The plan the training followed, as it was worked out before its first step."""
    epoch_losses: list[float] = Field(default_factory=list)
    """The mean loss of each epoch."""
    losses: list[float] = Field(default_factory=list)
    """The loss at each step, for the report's chart (at most ``MAX_LOSSES``, the means of equal runs of
    steps beyond)."""
    rewards: list[float] = Field(default_factory=list)
    """RL: the mean reward of each step's rollouts, thinned as ``losses`` (empty for SFT and DPO)."""


class FixedGate(Record):
    """The gate a trained candidate faces, fixed before the training's first step and kept in its training
    record and report: the held-out file (by path in the workspace and sha256), trials, ``min_z``, the
    pass score and the criteria held, and the baseline (the live version on those cases) as it was
    measured then. The candidate is measured on exactly this gate, and committed only while the file is
    unchanged."""

    file: str
    """The held-out cases file, relative to the workspace root."""
    sha256: str
    cases: int
    trials: int
    min_z: float = DEFAULT_MIN_Z
    pass_score: float = 1.0
    held: list[str] | None = None
    """The criteria no candidate may be worse on (those marked required, else all); None in a gate
    fixed before it was kept, which holds the rubric's at measuring time."""
    baseline: str
    """The live version's label it was measured against (``v1``)."""
    baseline_mean: float | None = None
    baseline_runs: int = 0
    """The live version's graded runs on the held-out cases at that time (reused or made then)."""
    cost_usd: float = 0.0
    """What measuring the baseline cost (its reused runs cost nothing again)."""
    fixed_at: datetime = Field(default_factory=now)


class GateReport(Record):
    """What ``propose`` found and decided: the data, each version's figures, each criterion before and
    after, the paired difference (candidate - live) and the gate's decision (``outcome``, with the
    reason in ``decision``). ``passed`` is ``outcome == "passed"``."""

    machine: str
    live: str
    candidate: str
    cases_file: str
    cases: int
    trials: int
    before: SideFigures
    after: SideFigures
    criteria: dict[str, CriterionFigures] = Field(default_factory=dict)
    diff: float | None = None
    se: float | None = None
    z: float | None = None
    paired_cases: int = 0
    up: int = 0
    """Paired cases whose mean rose with the candidate."""
    down: int = 0
    """Paired cases whose mean fell."""
    p_value: float | None = None
    """The exact one-sided sign test over the cases that changed (None: none was compared)."""
    min_z: float = DEFAULT_MIN_Z
    outcome: GateOutcome = "not passed"
    passed: bool = False
    decision: str = ""
    stopped: str | None = None
    cost_usd: float = 0.0
    created_at: datetime = Field(default_factory=now)
    training: TrainingSummary | None = None
    """For a candidate ``train`` made: what it learned from and how training went."""
    gate: FixedGate | None = None
    """For a candidate ``train`` made: the gate fixed before training, which this measurement used."""
    holdout: GateReport | None = None
    """For a candidate ``optimize`` kept: the same two sides on the held-out cases, where the candidate
    had to gain too (unless the live version was already at the maximum there); the paired gain above is
    then the one on the cases it was shown."""

    @model_validator(mode="before")
    @classmethod
    def _outcome_of_older_reports(cls, data: Any) -> Any:
        """A report written before ``outcome`` was kept has only ``passed``: its outcome follows it."""
        if isinstance(data, dict) and "outcome" not in data and "passed" in data:
            return {**data, "outcome": "passed" if data["passed"] is True else "not passed"}
        return data

    @model_validator(mode="after")
    def _passed_is_the_outcome(self) -> GateReport:
        if self.passed != (self.outcome == "passed"):
            raise ValueError(f"passed is {self.passed} but the outcome is {self.outcome!r}")
        return self

    @property
    def unmeasured(self) -> dict[str, list[str]]:
        """Each criterion not measured on a side, with the sides (``live v1``, ``candidate v2``): no grade
        of it scored there, or scored on fewer of the cases than ``needed_cases``."""
        need = needed_cases(self.cases)
        found: dict[str, list[str]] = {}
        for name, f in self.criteria.items():
            sides = [
                label
                for label, measured, after, side in (
                    (f"live {self.live}", f.measured_before, False, self.before),
                    (f"candidate {self.candidate}", f.measured_after, True, self.after),
                )
                if not measured or f.thin(after, side, need)
            ]
            if sides:
                found[name] = sides
        return found
