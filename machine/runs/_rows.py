"""How a store lays runs, sessions and suites out: the SQLite schema, and the rows every SQL store
writes and reads (a run's columns, a listing's summary, timestamps as stored)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from machine._data import Model

from ._names import check_name
from ._records import Message, Run, decided, now

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    case_id TEXT,
    trial INTEGER,
    conversation_id TEXT,
    score REAL,
    data TEXT NOT NULL,
    suite_id TEXT
);
CREATE INDEX IF NOT EXISTS runs_newest ON runs (machine, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at, id);
CREATE INDEX IF NOT EXISTS runs_conversation ON runs (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_newest ON sessions (machine, updated_at DESC);
CREATE TABLE IF NOT EXISTS suites (
    id TEXT PRIMARY KEY,
    machine TEXT NOT NULL,
    key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS suites_newest ON suites (machine, key, created_at DESC, id DESC);
"""
# Stores made before runs had a suite id get the column (and then the index) when they are opened.
SUITE_INDEX = (
    "CREATE INDEX IF NOT EXISTS runs_suite ON runs (suite_id, created_at, id) WHERE suite_id IS NOT NULL"
)

INPUT_PREVIEW = 100
"""How many characters of a run's input a ``RunSummary`` keeps."""
ERROR_PREVIEW = 300
"""How many characters of a failed run's error a ``RunSummary`` keeps (a page of them stays small)."""


Outcome = Literal["pass", "fail", "unscored", "error", "ungraded"]


class RunFilter(Model):
    """Which runs a page lists; each field given narrows it (all of them together)."""

    machine: str | None = None
    case_id: str | None = None
    outcome: Outcome | None = None
    """``pass``/``fail`` (decided, against the run's pass score: a run an UNSCORED criterion could still
    turn is neither), ``unscored`` (graded with a criterion UNSCORED), ``error`` (the run failed),
    ``ungraded``."""
    min_score: float | None = Field(default=None, ge=0, le=1)
    max_score: float | None = Field(default=None, ge=0, le=1)
    model: str | None = None
    version: str | None = None
    tag: str | None = None
    """A person's mark on the run: ``good``, ``bad`` or ``correction``."""
    suite_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    samples: bool = True
    """Whether the samples an RL training made of its policy (``Run.sampled_for``) are listed: the review
    queue leaves them out, how the machine does not being how a policy in training did."""


class ChatSession(Model):
    """A named conversation with a machine: what ``--continue`` resumes."""

    name: str
    machine: str
    conversation_id: str
    history: list[Message] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=now)


class SuiteRecord(Model):
    """One ``machine suite`` invocation: what ``--resume`` needs to finish it. ``key`` fingerprints the
    cases and the number of trials, so a resume finds the newest suite run on the same work."""

    id: str
    machine: str
    key: str
    trials: int
    cases: list[dict[str, Any]]
    cases_file: str | None = None
    model: str | None = None
    created_at: datetime = Field(default_factory=now)


class RunSummary(Model):
    """The fields of a stored run that a listing shows (``machine runs``, the server's ``recent_runs``),
    read without validating the whole run (``SQLiteStore.summaries``); each equals the run's own."""

    id: str
    created_at: datetime
    status: str
    score: float | None
    passed: bool | None
    graded: bool
    """Whether the run has a scorecard (graded, though perhaps with nothing scored)."""
    cost_usd: float
    case_id: str | None
    trial: int | None
    suite_id: str | None
    version: str | None
    model: str
    harness: str
    error: str | None
    """The run's error, cut to ``ERROR_PREVIEW`` characters."""
    input_preview: str
    """The first ``INPUT_PREVIEW`` characters of the input."""
    failing: list[str] = Field(default_factory=list)
    """The criteria scored below full marks, in the rubric's order: why a graded run did not pass."""
    tags: list[str] = Field(default_factory=list)
    """The kinds of the person's tags on the run (``good``, ``bad``, ``correction``), oldest first."""

    @classmethod
    def of(cls, run: Run) -> RunSummary:
        """The summary of a whole run, as the store lists it."""
        return cls(
            id=run.id,
            created_at=run.created_at,
            status=run.status,
            score=run.score,
            passed=run.passed,
            graded=run.scorecard is not None,
            cost_usd=run.cost_usd,
            case_id=run.case_id,
            trial=run.trial,
            suite_id=run.suite_id,
            version=run.version,
            model=run.model,
            harness=run.harness,
            error=_error_preview(run.error),
            input_preview=run.input[:INPUT_PREVIEW],
            failing=[] if run.scorecard is None else _failing(run.scorecard.model_dump()["criteria"]),
            tags=[tag.kind for tag in run.tags],
        )


def _failing(criteria: Mapping[str, Any]) -> list[str]:
    """The criteria scored below 1, from a scorecard's ``criteria`` as it is stored."""
    return [name for name, c in criteria.items() if c["score"] is not None and c["score"] < 1.0]


DERIVED: dict[str, Any] = {"score": True, "passed": True, "scorecard": {"score": True, "passed": True}}
"""A run's computed fields, left out of the stored JSON: reading it back computes them again, and leaving
them out halves the cost of writing a run."""


def run_row(
    run: Run,
) -> tuple[str, str, str, str, str | None, int | None, str | None, float | None, str, str | None]:
    """The columns of one run; refuses a bad machine name or run id before anything is written."""
    check_name(run.machine)
    check_name(run.id, "run id")
    return (
        run.id,
        run.machine,
        utc_text(run.created_at),
        run.status,
        run.case_id,
        run.trial,
        run.conversation_id,
        run.score,
        run.model_dump_json(exclude=DERIVED),
        run.suite_id,
    )


def summary_row(
    run_id: str,
    status: str,
    case_id: str | None,
    trial: int | None,
    suite_id: str | None,
    score: float | None,
    fields: str,
) -> RunSummary:
    """One row of ``Statements.newest_summaries`` (id, then ``summary_fields``) as a ``RunSummary``."""
    started_at, version, model, harness, cost_usd, error, fingerprint, pass_score, text, criteria, tags = (
        json.loads(fields)
    )
    graded = fingerprint is not None
    passed = None
    if graded and score is not None:  # as Scorecard.passed
        grades = ((c["weight"], c["score"]) for c in (criteria or {}).values())
        passed = decided(grades, 1.0 if pass_score is None else pass_score)
    return RunSummary.model_construct(  # the store wrote these fields: no need to check them again
        id=run_id,
        created_at=datetime.fromisoformat(started_at),
        status=status,
        score=score,
        passed=passed,
        graded=graded,
        cost_usd=float(cost_usd if cost_usd is not None else 0.0),
        case_id=case_id,
        trial=trial,
        suite_id=suite_id,
        version=version,
        model=model,
        harness=harness,
        error=_error_preview(error),
        input_preview=(text or "")[:INPUT_PREVIEW],
        failing=_failing(criteria or {}),
        tags=[tag["kind"] for tag in tags or []],
    )


def _error_preview(error: str | None) -> str | None:
    if error is None or len(error) <= ERROR_PREVIEW:
        return error
    return error[: ERROR_PREVIEW - 1] + "…"


def utc_text(moment: datetime) -> str:
    """Fixed-width UTC text, so string order is time order."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
