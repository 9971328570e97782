"""The store's reads for a viewer (the dashboard): a filtered page of run summaries, a machine's recent
quality and spend, and per-case means of a version or a suite, each bounded in the rows it reads. The
statements are ``_statements``'s, so every SQL store pages the same way.

A page walks the newest-first index of a machine (or of every run) from a cursor and filters the rows as
it goes, but never further than ``WINDOW`` rows: a filter that matches little answers with what it found
and a cursor past the window, so no request reads the whole table however large it grows. Per-case means
are summed by the database (one small row a case), so memory stays flat in the number of runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pydantic import Field

from machine._data import Model

from ._rows import RunFilter, RunSummary, summary_row
from ._statements import NEWEST, TREND_LIMIT, Statements

WINDOW = 20_000
"""The most rows one page reads past its cursor."""
Query = Callable[[str, Sequence[Any]], list[Any]]
"""A store's reader: the rows a statement answers for its parameters."""


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


def page(query: Query, sql: Statements, chosen: RunFilter, *, cursor: str | None, limit: int) -> RunPage:
    """Up to ``limit`` runs matching ``chosen``, newest first, after ``cursor``, reading at most
    ``WINDOW`` rows of the index."""
    before = parse_cursor(cursor)
    params = [chosen.machine] if chosen.machine else []
    walk = sql.walk(scoped=bool(chosen.machine))
    conditions, values = sql.where(chosen)
    where = " AND ".join(conditions) or "TRUE"
    # where the walk's order is kept, no second sort: the fields are read for the rows returned, no more
    order = "" if sql.dialect.keeps_subquery_order else f" {NEWEST}"
    statement = (
        f"SELECT created_at, id, {sql.summary_fields} FROM ({walk} LIMIT {WINDOW}) AS walked WHERE {where}"
        f"{order} LIMIT {sql.dialect.param}"
    )
    rows = query(statement, [*params, *before, *values, limit + 1])
    runs = [summary_row(row[1], *row[2:]) for row in rows[:limit]]
    if len(rows) > limit:
        return RunPage(runs=runs, next=cursor_of(*rows[limit - 1][:2]))
    edge = query(
        f"SELECT created_at, id FROM ({walk} LIMIT 1 OFFSET {WINDOW - 1}) AS edge", [*params, *before]
    )
    if not edge:
        return RunPage(runs=runs)
    more = bool(query(f"SELECT 1 FROM ({walk} LIMIT 1) AS more", [*params, *edge[0]]))
    return RunPage(runs=runs, next=cursor_of(*edge[0]) if more else None, window_full=True)


class TrendPoint(Model):
    """One run of a machine's trend."""

    at: datetime
    score: float | None
    cost_usd: float
    status: str


def points(rows: list[Any]) -> list[TrendPoint]:
    """Rows of (created_at, score, cost, status), newest first, as the trend's points, oldest first."""
    return [
        TrendPoint.model_construct(
            at=datetime.fromisoformat(at), score=score, cost_usd=float(cost or 0.0), status=status
        )
        for at, score, cost, status in reversed(rows)
    ]


class Choices(Model):
    """What a machine's runs can be filtered and compared by, read from its newest ``TREND_LIMIT`` runs
    and its newest suites: the values a viewer offers."""

    cases: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    versions: list[str] = Field(default_factory=list)
    suites: list[dict[str, Any]] = Field(default_factory=list)
    """The newest suites: id and when each started."""


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


__all__ = [
    "TREND_LIMIT",
    "WINDOW",
    "Choices",
    "Query",
    "RunPage",
    "TrendPoint",
    "choices_of",
    "cursor_of",
    "page",
    "parse_cursor",
    "points",
]
