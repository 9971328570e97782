"""The store's reads for a viewer (the dashboard): a filtered page of run summaries, a machine's recent
quality and spend, and per-case means of a version or a suite, each bounded in the rows it reads.

A page walks the newest-first index of a machine (or of every run) from a cursor and filters the rows as
it goes, but never further than ``WINDOW`` rows: a filter that matches little answers with what it found
and a cursor past the window, so no request reads the whole table however large it grows. Per-case means
are summed by SQLite (one small row a case), so memory stays flat in the number of runs.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ._records import Model
from ._rows import RunSummary, summary_row, utc_text

WINDOW = 20_000
"""The most rows one page reads past its cursor."""
TREND_LIMIT = 5_000
"""The newest runs a machine's trend is drawn from."""
Outcome = Literal["pass", "fail", "unscored", "error", "ungraded"]

FIELDS = (
    "status, case_id, trial, suite_id, score, json_extract(data, '$.timings.started_at', '$.version',"
    " '$.model', '$.harness', '$.cost_usd', '$.error', '$.scorecard.rubric_fingerprint',"
    " '$.scorecard.pass_score', '$.input', '$.scorecard.criteria', '$.tags')"
)
PASS_SCORE = "coalesce(json_extract(data, '$.scorecard.pass_score'), 1.0) - 1e-9"
BOUND = (
    "(SELECT sum(1.0 * json_extract(value, '$.weight') * coalesce(json_extract(value, '$.score'), {})) /"
    " sum(1.0 * json_extract(value, '$.weight')) FROM json_each(data, '$.scorecard.criteria'))"
)
"""A run's weighted score with every UNSCORED criterion at the given mark: at 0 it passes only a decided
pass, at 1 it fails only a decided fail (``Scorecard.passed``)."""
OUTCOMES: dict[str, str] = {
    "pass": f"score IS NOT NULL AND {BOUND.format(0.0)} >= {PASS_SCORE}",
    "fail": f"score IS NOT NULL AND {BOUND.format(1.0)} < {PASS_SCORE}",
    "unscored": "status = 'ok' AND instr(json_extract(data, '$.scorecard.criteria'), '\"score\":null') > 0",
    "error": "status = 'error'",
    "ungraded": "status = 'ok' AND json_extract(data, '$.scorecard') IS NULL",
}


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

    def where(self) -> tuple[list[str], list[Any]]:
        """The SQL conditions (besides the machine's, which picks the index) and their parameters."""
        conditions: list[tuple[str, Any]] = [
            ("case_id = ?", self.case_id),
            ("suite_id = ?", self.suite_id),
            ("score >= ?", self.min_score),
            ("score <= ?", self.max_score),
            ("json_extract(data, '$.model') = ?", self.model),
            ("json_extract(data, '$.version') = ?", self.version),
            (
                "EXISTS (SELECT 1 FROM json_each(data, '$.tags') WHERE json_extract(value, '$.kind') = ?)",
                self.tag,
            ),
            ("created_at >= ?", None if self.since is None else utc_text(self.since)),
            ("created_at < ?", None if self.until is None else utc_text(self.until)),
        ]
        kept = [(sql, value) for sql, value in conditions if value is not None]
        sql = [c for c, _ in kept] + ([OUTCOMES[self.outcome]] if self.outcome else [])
        return sql, [v for _, v in kept]


class RunPage(Model):
    """One page of run summaries, newest first, and where the next begins."""

    runs: list[RunSummary]
    next: str | None = None
    """The cursor of the next page (None: none is left)."""
    window_full: bool = False
    """The page stopped after reading ``WINDOW`` rows, before ``limit`` matched: ``next`` goes on."""


def cursor_of(created_at: str, run_id: str) -> str:
    return f"{created_at}|{run_id}"


def parse_cursor(text: str | None) -> tuple[str, str]:
    """A page's cursor as (created_at, id); none: from the newest."""
    if not text:
        return ("\uffff", "")
    at, _, run_id = text.partition("|")
    return at, run_id


NEWEST = "ORDER BY created_at DESC, id DESC"
WALK = (
    "SELECT created_at, id, status, case_id, trial, suite_id, score, data FROM runs WHERE {scope}"
    f"(created_at, id) < (?, ?) {NEWEST}"
)


def page(db: sqlite3.Connection, chosen: RunFilter, *, cursor: str | None, limit: int) -> RunPage:
    """Up to ``limit`` runs matching ``chosen``, newest first, after ``cursor``, reading at most
    ``WINDOW`` rows of the index."""
    before = parse_cursor(cursor)
    scope, params = ("machine = ? AND ", [chosen.machine]) if chosen.machine else ("", [])
    walk = WALK.format(scope=scope)
    conditions, values = chosen.where()
    where = " AND ".join(conditions) or "1"
    # the walk's order is kept (no second sort): the fields are read for the rows returned, no more
    sql = f"SELECT created_at, id, {FIELDS} FROM ({walk} LIMIT {WINDOW}) WHERE {where} LIMIT ?"
    rows = db.execute(sql, [*params, *before, *values, limit + 1]).fetchall()
    runs = [summary_row(row[1], *row[2:]) for row in rows[:limit]]
    if len(rows) > limit:
        return RunPage(runs=runs, next=cursor_of(*rows[limit - 1][:2]))
    edge = db.execute(
        f"SELECT created_at, id FROM ({walk} LIMIT 1 OFFSET {WINDOW - 1})", [*params, *before]
    ).fetchone()
    if edge is None:
        return RunPage(runs=runs)
    more = db.execute(f"SELECT 1 FROM ({walk} LIMIT 1)", [*params, *edge]).fetchone() is not None
    return RunPage(runs=runs, next=cursor_of(*edge) if more else None, window_full=True)


class TrendPoint(Model):
    """One run of a machine's trend."""

    at: datetime
    score: float | None
    cost_usd: float
    status: str


def trend(db: sqlite3.Connection, machine: str, limit: int = TREND_LIMIT) -> list[TrendPoint]:
    """The newest ``limit`` runs of ``machine``, oldest first: when, how well, at what cost."""
    rows = db.execute(
        "SELECT created_at, score, json_extract(data, '$.cost_usd'), status FROM runs WHERE machine = ?"
        f" {NEWEST} LIMIT ?",
        (machine, limit),
    ).fetchall()
    return points(rows)


def points(rows: list[Any]) -> list[TrendPoint]:
    """Rows of (created_at, score, cost, status), newest first, as the trend's points, oldest first."""
    return [
        TrendPoint.model_construct(
            at=datetime.fromisoformat(at), score=score, cost_usd=float(cost or 0.0), status=status
        )
        for at, score, cost, status in reversed(rows)
    ]


def case_means(
    db: sqlite3.Connection, machine: str, *, version: str | None = None, suite_id: str | None = None
) -> dict[str, tuple[float, int]]:
    """Each case's mean score and scored runs, over the runs of one version of ``machine`` or of one
    suite; a failed run counts as 0 on its side (as the gate counts it), an unscored one not at all."""
    if (version is None) == (suite_id is None):
        raise ValueError("give a version or a suite")
    which, value = (
        ("suite_id = ?", suite_id) if suite_id else ("json_extract(data, '$.version') = ?", version)
    )
    scored = "CASE WHEN status = 'error' THEN 0.0 ELSE score END"
    rows = db.execute(
        f"SELECT case_id, avg(s), count(s) FROM (SELECT case_id, {scored} AS s FROM runs WHERE machine = ?"
        f" AND case_id IS NOT NULL AND {which}) GROUP BY case_id",
        (machine, value),
    ).fetchall()
    return {case: (float(mean), int(n)) for case, mean, n in rows if n}


class Choices(Model):
    """What a machine's runs can be filtered and compared by, read from its newest ``TREND_LIMIT`` runs
    and its newest suites: the values a viewer offers."""

    cases: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    versions: list[str] = Field(default_factory=list)
    suites: list[dict[str, Any]] = Field(default_factory=list)
    """The newest suites: id and when each started."""


def choices(db: sqlite3.Connection, machine: str) -> Choices:
    rows = db.execute(
        "SELECT case_id, json_extract(data, '$.model', '$.version') FROM runs WHERE machine = ?"
        f" {NEWEST} LIMIT {TREND_LIMIT}",
        (machine,),
    ).fetchall()
    suites = db.execute(
        "SELECT id, created_at FROM suites WHERE machine = ? ORDER BY created_at DESC, id DESC LIMIT 50",
        (machine,),
    ).fetchall()
    return choices_of(rows, suites)


def choices_of(rows: list[Any], suites: list[Any]) -> Choices:
    """The choices read from rows of (case_id, [model, version] as JSON text) and of (suite id, when)."""
    cases: set[str] = set()
    models: set[str] = set()
    versions: set[str] = set()
    for case_id, fields in rows:
        model, version = json.loads(fields)
        cases.update([case_id] if case_id else [])
        models.update([model] if model else [])
        versions.update([version] if version else [])
    return Choices(
        cases=sorted(cases),
        models=sorted(models),
        versions=sorted(versions, key=_version_order),
        suites=[{"id": i, "created_at": at} for i, at in suites],
    )


def _version_order(label: str) -> tuple[int, str]:
    """``v2`` before ``v10``; any other label after the numbered ones."""
    digits = label.removeprefix("v")
    return (int(digits), "") if digits.isdigit() else (1 << 30, label)


def machine_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Every machine with runs in the store, and how many (one walk of the machine index)."""
    return {m: int(n) for m, n in db.execute("SELECT machine, count(*) FROM runs GROUP BY machine")}


__all__ = [
    "OUTCOMES",
    "TREND_LIMIT",
    "WINDOW",
    "Outcome",
    "RunFilter",
    "RunPage",
    "TrendPoint",
    "case_means",
    "page",
    "trend",
]
