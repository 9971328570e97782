"""The PostgreSQL store's statements, each the SQLite store's (``machine.runs``) in PostgreSQL's words:
JSONB paths for ``json_extract``, containment for a tag, a JSON path for an UNSCORED criterion."""

from __future__ import annotations

from typing import Any

from ._rows import utc_text
from ._views import RunFilter

PAGE_SIZE = 500
WINDOW = 20_000
"""The most rows one page of a viewer reads past its cursor (as the SQLite store's)."""
NEWEST = "ORDER BY created_at DESC, id DESC"

UPSERT_RUN = (
    "INSERT INTO runs (id, machine, created_at, status, case_id, trial, conversation_id, score, data,"
    " suite_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s) ON CONFLICT (id) DO UPDATE SET"
    " machine = excluded.machine, created_at = excluded.created_at, status = excluded.status,"
    " case_id = excluded.case_id, trial = excluded.trial, conversation_id = excluded.conversation_id,"
    " score = excluded.score, data = excluded.data, suite_id = excluded.suite_id"
)
SUMMARY_FIELDS = (
    "status, case_id, trial, suite_id, score, jsonb_build_array(data #> '{timings,started_at}',"
    " data -> 'version', data -> 'model', data -> 'harness', data -> 'cost_usd', data -> 'error',"
    " data #> '{scorecard,rubric_fingerprint}', data #> '{scorecard,pass_score}', data -> 'input',"
    " data #> '{scorecard,criteria}', data -> 'tags')::text"
)
NEWEST_RUNS = f"SELECT data::text FROM runs WHERE machine = %s {NEWEST} LIMIT %s"
NEWEST_SUMMARIES = f"SELECT id, {SUMMARY_FIELDS} FROM runs WHERE machine = %s {NEWEST} LIMIT %s"
PAGE_RUNS = (
    "SELECT created_at, id, data::text FROM runs WHERE (created_at, id) > (%s, %s)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
PAGE_MACHINE_RUNS = (
    "SELECT created_at, id, data::text FROM runs WHERE machine = %s AND (created_at, id) > (%s, %s)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
PAGE_SUITE_RUNS = (
    "SELECT created_at, id, data::text FROM runs WHERE suite_id = %s AND (created_at, id) > (%s, %s)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
COMPACT = "replace(replace(data::text, '\": ', '\":'), ', \"', ',\"')"
"""A run's JSON as the SQLite store keeps its text (no space after a colon or a comma between keys), so a
caller's superset search for ``"observed":true`` reads the same in both stores."""

PASS_SCORE = "coalesce((data #>> '{scorecard,pass_score}')::float8, 1.0) - 1e-9"
BOUND = (
    "(SELECT sum((c ->> 'weight')::float8 * coalesce((c ->> 'score')::float8, {})) /"
    " nullif(sum((c ->> 'weight')::float8), 0) FROM jsonb_each(data #> '{{scorecard,criteria}}') AS e(k, c))"
)
"""``_views.BOUND``: a run's weighted score with every UNSCORED criterion at the given mark."""
OUTCOMES: dict[str, str] = {
    "pass": f"score IS NOT NULL AND {BOUND.format(0.0)} >= {PASS_SCORE}",
    "fail": f"score IS NOT NULL AND {BOUND.format(1.0)} < {PASS_SCORE}",
    "unscored": "status = 'ok' AND jsonb_path_exists(data, '$.scorecard.criteria.* ? (@.score == null)')",
    "error": "status = 'error'",
    "ungraded": "status = 'ok' AND (data -> 'scorecard' IS NULL OR data -> 'scorecard' = 'null'::jsonb)",
}


def where(chosen: RunFilter) -> tuple[list[str], list[Any]]:
    """``RunFilter.where`` for PostgreSQL: the conditions besides the machine's, and their parameters."""
    tag = None if chosen.tag is None else [{"kind": chosen.tag}]
    conditions: list[tuple[str, Any]] = [
        ("case_id = %s", chosen.case_id),
        ("suite_id = %s", chosen.suite_id),
        ("score >= %s", chosen.min_score),
        ("score <= %s", chosen.max_score),
        ("data ->> 'model' = %s", chosen.model),
        ("data ->> 'version' = %s", chosen.version),
        ("data -> 'tags' @> %s::jsonb", None if tag is None else _json(tag)),
        ("created_at >= %s", None if chosen.since is None else utc_text(chosen.since)),
        ("created_at < %s", None if chosen.until is None else utc_text(chosen.until)),
    ]
    kept = [(sql, value) for sql, value in conditions if value is not None]
    sql = [c for c, _ in kept] + ([OUTCOMES[chosen.outcome]] if chosen.outcome else [])
    return sql, [v for _, v in kept]


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def walk(scope: str) -> str:
    """The newest-first walk of the index from a cursor (``scope``: the machine's condition, or none)."""
    return (
        "SELECT created_at, id, status, case_id, trial, suite_id, score, data FROM runs WHERE"
        f" {scope}(created_at, id) < (%s, %s) {NEWEST}"
    )


ADD_SPENDING = (
    "INSERT INTO spending (correlation_id, at, data) VALUES (%s, %s, %s) "
    "ON CONFLICT (correlation_id) DO NOTHING"
)
SPENDING = "SELECT data FROM spending ORDER BY id DESC LIMIT %s"
"""The newest lines of the spending log (a LIMIT of NULL: all of them)."""


__all__ = [
    "ADD_SPENDING",
    "COMPACT",
    "NEWEST_RUNS",
    "NEWEST_SUMMARIES",
    "PAGE_MACHINE_RUNS",
    "PAGE_RUNS",
    "PAGE_SIZE",
    "PAGE_SUITE_RUNS",
    "SPENDING",
    "SUMMARY_FIELDS",
    "UPSERT_RUN",
    "WINDOW",
    "walk",
    "where",
]
