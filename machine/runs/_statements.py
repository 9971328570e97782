"""The statements every SQL store runs, written once and spelled by a ``Dialect``: the same tables, the
same index walks (newest first by ``(created_at, id)``, or oldest first in pages), the same filters of a
viewer's page and the same outcome rules, so the SQLite and PostgreSQL stores answer alike. Tests ask
SQLite how it plans them (EXPLAIN QUERY PLAN) to prove no listing scans the table."""

from __future__ import annotations

import json
from typing import Any

from ._dialect import Dialect
from ._rows import RunFilter, utc_text

PAGE_SIZE = 500
"""How many rows one read of a paged walk (``iter_runs`` and the like) takes."""
TREND_LIMIT = 5_000
"""The newest runs a machine's trend (and its choices) are drawn from."""
NEWEST = "ORDER BY created_at DESC, id DESC"
OLDEST = "ORDER BY created_at, id"
RUN_COLUMNS = (
    "id",
    "machine",
    "created_at",
    "status",
    "case_id",
    "trial",
    "conversation_id",
    "score",
    "data",
    "suite_id",
)
"""A run's columns, in the order of ``run_row``."""
SUMMARY_PATHS = (
    "timings.started_at",
    "version",
    "model",
    "harness",
    "cost_usd",
    "error",
    "scorecard.rubric_fingerprint",
    "scorecard.pass_score",
    "input",
    "scorecard.criteria",
    "tags",
)
"""The fields of a run's JSON a ``RunSummary`` reads (``summary_row``), in its order. ``rubric_fingerprint``
is a required field of a scorecard: not null iff the run was graded."""


def upsert(dialect: Dialect, table: str, columns: tuple[str, ...], key: str) -> str:
    """Insert a row of ``table``, or replace every column of the row with the same ``key``."""
    values = ", ".join(dialect.json_param if c == "data" else dialect.param for c in columns)
    replaced = ", ".join(f"{c}=excluded.{c}" for c in columns if c != key)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({values})"
        f" ON CONFLICT ({key}) DO UPDATE SET {replaced}"
    )


class Statements:
    """The statements of one dialect: fixed ones as attributes, the rest built from their arguments."""

    def __init__(self, dialect: Dialect) -> None:
        d, p = dialect, dialect.param
        self.dialect = dialect
        self.upsert_run = upsert(d, "runs", RUN_COLUMNS, "id")
        self.upsert_session = upsert(d, "sessions", ("name", "machine", "updated_at", "data"), "name")
        self.upsert_suite = upsert(d, "suites", ("id", "machine", "key", "created_at", "data"), "id")
        self.get_run = f"SELECT {d.data} FROM runs WHERE id = {p}"
        self.get_session = f"SELECT {d.data} FROM sessions WHERE name = {p}"
        self.get_suite = f"SELECT {d.data} FROM suites WHERE id = {p}"
        self.newest_runs = f"SELECT {d.data} FROM runs WHERE machine = {p} {NEWEST} LIMIT {p}"
        """The newest runs of a machine: a walk of ``runs_newest``."""
        self.summary_fields = f"status, case_id, trial, suite_id, score, {d.json_fields(SUMMARY_PATHS)}"
        """The columns after a run's id that ``summary_row`` takes."""
        self.newest_summaries = (
            f"SELECT id, {self.summary_fields} FROM runs WHERE machine = {p} {NEWEST} LIMIT {p}"
        )
        """``newest_runs``, reading only the fields a listing shows."""
        walked = f"SELECT created_at, id, {d.data} FROM runs WHERE"
        after = f"(created_at, id) > ({p}, {p}) {OLDEST} LIMIT {PAGE_SIZE}"
        self.page_runs = f"{walked} {after}"
        """A page of every run, oldest first, after a (created_at, id): a walk of ``runs_created``."""
        self.page_machine_runs = f"{walked} machine = {p} AND {after}"
        self.page_suite_runs = f"{walked} suite_id = {p} AND {after}"
        self.latest_suite = f"SELECT {d.data} FROM suites WHERE machine = {p} AND key = {p} {NEWEST} LIMIT 1"
        self.latest_session = (
            f"SELECT {d.data} FROM sessions WHERE machine = {p} ORDER BY updated_at DESC LIMIT 1"
        )
        self.sessions = f"SELECT {d.data} FROM sessions ORDER BY name"
        self.suites = f"SELECT {d.data} FROM suites {OLDEST}"
        self.count = "SELECT count(*) FROM runs"
        self.count_machine = f"SELECT count(*) FROM runs WHERE machine = {p}"
        self.tally = (
            f"SELECT count(*), count(CASE WHEN status = 'ok' THEN 1 END) FROM runs WHERE machine = {p}"
        )
        self.trend = (
            f"SELECT created_at, score, {d.json_number('cost_usd')}, status FROM runs WHERE machine = {p}"
            f" {NEWEST} LIMIT {p}"
        )
        self.choices = (
            f"SELECT case_id, {d.json_fields(('model', 'version'))} FROM runs WHERE machine = {p}"
            f" {NEWEST} LIMIT {TREND_LIMIT}"
        )
        self.choice_suites = f"SELECT id, created_at FROM suites WHERE machine = {p} {NEWEST} LIMIT 50"
        self.machine_counts = "SELECT machine, count(*) FROM runs GROUP BY machine"
        self.outcomes = outcomes(d)
        """The condition of each ``RunFilter.outcome``."""
        self.health, self.health_criteria, self.health_trend = health(d, self.outcomes)
        """A machine's figures, its criteria and its trend over its newest runs (``_health``)."""
        self.failing_grades, self.failed_runs = failing(d)
        """The grades below the pass score and the failed runs among a machine's newest (``_failing``)."""

    def learnable(self, min_score: float | None, marks: tuple[str, ...]) -> tuple[str, list[Any]]:
        """A page of a machine's finished runs, oldest first, that score at least ``min_score`` or may
        carry one of ``marks``, and the parameters between the machine and the cursor."""
        d, p = self.dialect, self.dialect.param
        either = [*([f"score >= {p}"] if min_score is not None else []), *[d.marked] * len(marks)]
        wanted: list[Any] = [*([min_score] if min_score is not None else [])]
        wanted += [d.mark.format(kind=json.dumps(m)) for m in marks]
        statement = (
            f"SELECT created_at, id, {d.data} FROM runs WHERE machine = {p} AND status = 'ok' AND"
            f" ({' OR '.join(either) or 'TRUE'}) AND (created_at, id) > ({p}, {p}) {OLDEST} LIMIT {PAGE_SIZE}"
        )
        return statement, wanted

    def newest_with(self, scoped: bool) -> str:
        """A page of the runs (of a machine, when ``scoped``) whose JSON holds a text, newest first,
        before a (created_at, id): a walk of the time index."""
        d, p = self.dialect, self.dialect.param
        scope = f"machine = {p} AND " if scoped else ""
        return (
            f"SELECT created_at, id, {d.data} FROM runs WHERE {scope}{d.holds} AND"
            f" (created_at, id) < ({p}, {p}) {NEWEST} LIMIT {PAGE_SIZE}"
        )

    def walk(self, scoped: bool) -> str:
        """The newest-first walk of the index (of a machine's runs, when ``scoped``) from a cursor."""
        p = self.dialect.param
        scope = f"machine = {p} AND " if scoped else ""
        return (
            "SELECT created_at, id, status, case_id, trial, suite_id, score, data FROM runs WHERE"
            f" {scope}(created_at, id) < ({p}, {p}) {NEWEST}"
        )

    def where(self, chosen: RunFilter) -> tuple[list[str], list[Any]]:
        """The conditions of ``chosen`` besides its machine's (which picks the index), and their
        parameters."""
        d, p = self.dialect, self.dialect.param
        kind = d.item_field.format(key="kind")
        tagged = f"EXISTS (SELECT 1 FROM {d.path(d.items_of, 'tags')} WHERE {kind} = {p})"
        conditions: list[tuple[str, Any]] = [
            (f"case_id = {p}", chosen.case_id),
            (f"suite_id = {p}", chosen.suite_id),
            (f"score >= {p}", chosen.min_score),
            (f"score <= {p}", chosen.max_score),
            (f"{d.json_field('model')} = {p}", chosen.model),
            (f"{d.json_field('version')} = {p}", chosen.version),
            (tagged, chosen.tag),
            (f"created_at >= {p}", None if chosen.since is None else utc_text(chosen.since)),
            (f"created_at < {p}", None if chosen.until is None else utc_text(chosen.until)),
        ]
        kept = [(sql, value) for sql, value in conditions if value is not None]
        sql = [c for c, _ in kept] + ([self.outcomes[chosen.outcome]] if chosen.outcome else [])
        sql += [] if chosen.samples else [own_run(d)]
        return sql, [v for _, v in kept]

    def case_means(self, by_suite: bool) -> str:
        """Each case's mean score and scored runs, over a machine's runs of one suite (``by_suite``) or
        of one version; a failed run counts 0, an unscored one not at all."""
        d, p = self.dialect, self.dialect.param
        which = f"suite_id = {p}" if by_suite else f"{d.json_field('version')} = {p}"
        scored = "CASE WHEN status = 'error' THEN 0.0 ELSE score END"
        return (
            f"SELECT case_id, avg(s), count(s) FROM (SELECT case_id, {scored} AS s FROM runs WHERE"
            f" machine = {p} AND case_id IS NOT NULL AND {which}) AS scored GROUP BY case_id"
        )


def outcomes(d: Dialect) -> dict[str, str]:
    """The condition of each outcome a viewer filters by (``RunFilter.outcome``)."""
    pass_score = f"coalesce({d.json_number('scorecard.pass_score')}, 1.0) - 1e-9"
    criteria = d.path(d.values_of, "scorecard.criteria")
    weight, score = d.item_number.format(key="weight"), d.item_number.format(key="score")

    def bound(mark: float) -> str:
        """A run's weighted score with every UNSCORED criterion at ``mark``: at 0 it passes only a
        decided pass, at 1 it fails only a decided fail (``Scorecard.passed``)."""
        return (
            f"(SELECT sum({weight} * coalesce({score}, {mark})) / nullif(sum({weight}), 0) FROM {criteria})"
        )

    unscored = f"EXISTS (SELECT 1 FROM {criteria} WHERE {d.item_field.format(key='score')} IS NULL)"
    return {
        "pass": f"score IS NOT NULL AND {bound(0.0)} >= {pass_score}",
        "fail": f"score IS NOT NULL AND {bound(1.0)} < {pass_score}",
        "unscored": f"status = 'ok' AND {unscored}",
        "error": "status = 'error'",
        "ungraded": f"status = 'ok' AND {d.json_field('scorecard')} IS NULL",
    }


def health(d: Dialect, outcome: dict[str, str]) -> tuple[str, str, str]:
    """How a machine does over its newest runs (parameters: the machine, then how many runs), summed by
    the database along the ``runs_newest`` index: the run counts, mean, passes, fails and spend; each
    criterion's grades; and the mean of each slice of the runs (its first parameter: the slice's size).
    A failed run counts 0 and as a fail, as the gate counts it; an unscored one is in no mean."""
    p, failed = d.param, "status = 'error'"
    newest = f"FROM runs WHERE machine = {p} AND {own_run(d)} {NEWEST} LIMIT {p}"
    figures = (
        f"SELECT count(*), count(CASE WHEN {failed} THEN 1 END),"
        f" count(CASE WHEN NOT {failed} AND score IS NOT NULL THEN 1 END),"
        f" count(CASE WHEN NOT {failed} AND {d.json_field('scorecard')} IS NULL THEN 1 END),"
        f" avg(CASE WHEN {failed} THEN 0.0 ELSE score END),"
        f" count(CASE WHEN NOT {failed} AND {outcome['pass']} THEN 1 END),"
        f" count(CASE WHEN NOT {failed} AND {outcome['fail']} THEN 1 END),"
        f" sum({d.json_number('cost_usd')}), max(created_at)"
        f" FROM (SELECT status, score, created_at, data {newest}) AS newest"
    )
    grade = d.item_number.format(key="score")
    below = f"{grade} < coalesce({d.json_number('scorecard.pass_score')}, 1.0) - 1e-9"
    criteria = (
        f"SELECT key, count({grade}), count(*), avg({grade}), count(CASE WHEN {below} THEN 1 END)"
        f" FROM (SELECT status, data {newest}) AS newest, {d.path(d.values_of, 'scorecard.criteria')}"
        f" WHERE NOT {failed} GROUP BY key"
    )
    trend = (
        f"SELECT slice, avg(s) FROM (SELECT (row_number() OVER ({NEWEST}) - 1) / {p} AS slice,"
        f" CASE WHEN {failed} THEN 0.0 ELSE score END AS s"
        f" FROM (SELECT created_at, id, status, score {newest}) AS newest) AS sliced GROUP BY slice"
    )
    return figures, criteria, trend


READ_CHARS = 1_000
"""The most characters of a grader's reason or a run's error a failing read takes from the database."""


def own_run(d: Dialect) -> str:
    """The condition that a run is the machine's own, not a sample an RL training made of its policy
    (``Run.sampled_for``): how the machine does is not how a policy in training did."""
    return f"{d.json_field('sampled_for')} IS NULL"


def failing(d: Dialect) -> tuple[str, str]:
    """What fails among a machine's newest runs (parameters: the machine, then how many runs), read along
    the ``runs_newest`` index, a few fields of each and never a run whole: each grade scored below its
    run's pass score (id, time, criterion, score, grader, reason), and each failed run (id, time, error)."""
    p, failed = d.param, "status = 'error'"
    newest = (
        f"(SELECT id, created_at, status, data FROM runs WHERE machine = {p} AND {own_run(d)}"
        f" {NEWEST} LIMIT {p}) AS newest"
    )
    grade = d.item_number.format(key="score")
    below = f"{grade} < coalesce({d.json_number('scorecard.pass_score')}, 1.0) - 1e-9"
    grader, reason = (d.item_field.format(key=k) for k in ("grader", "reason"))
    grades = (
        f"SELECT newest.id, newest.created_at, key, {grade}, {grader}, substr({reason}, 1, {READ_CHARS})"
        f" FROM {newest}, {d.path(d.values_of, 'scorecard.criteria')} WHERE NOT {failed} AND {below}"
    )
    error = f"substr({d.json_field('error')}, 1, {READ_CHARS})"
    errors = f"SELECT id, created_at, {error} FROM {newest} WHERE {failed}"
    return grades, errors


__all__ = [
    "NEWEST",
    "OLDEST",
    "PAGE_SIZE",
    "READ_CHARS",
    "RUN_COLUMNS",
    "SUMMARY_PATHS",
    "TREND_LIMIT",
    "Statements",
    "upsert",
]
