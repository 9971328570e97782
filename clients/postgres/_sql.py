"""The PostgreSQL store's words for the statements every SQL store shares (``POSTGRES``, a ``Dialect``):
JSONB paths for SQLite's ``json_extract``, ``jsonb_each`` for its ``json_each``, containment for a mark,
``%s`` for ``?``. The statements themselves are ``machine.runs.storage.Statements``; only the spending
log's are PostgreSQL's alone."""

from __future__ import annotations

from machine.runs.storage import Dialect, Statements

COMPACT = "replace(replace(data::text, '\": ', '\":'), ', \"', ',\"')"
"""A run's JSON as the SQLite store keeps its text (no space after a colon or a comma between keys), so a
caller's superset search for ``"observed":true`` reads the same in both stores."""

POSTGRES = Dialect(
    name="postgresql",
    param="%s",
    json_param="%s::jsonb",
    data="data::text",
    field="(data #>> '{{{keys}}}')",
    number="(data #>> '{{{keys}}}')::float8",
    fields="jsonb_build_array({each})::text",
    each="data #> '{{{keys}}}'",
    values_of="jsonb_each(data #> '{{{keys}}}') AS item(key, value)",
    items_of="jsonb_array_elements(data #> '{{{keys}}}') AS item(value)",
    item_field="(value ->> '{key}')",
    item_number="(value ->> '{key}')::float8",
    holds=f"strpos({COMPACT}, %s) > 0",
    marked="data -> 'tags' @> %s::jsonb",
    mark='[{{"kind": {kind}}}]',
    keeps_subquery_order=False,
)
"""PostgreSQL's dialect: runs kept as JSONB, read with its path operators."""

STATEMENTS = Statements(POSTGRES)
NEWEST_RUNS = STATEMENTS.newest_runs
NEWEST_SUMMARIES = STATEMENTS.newest_summaries

ADD_SPENDING = (
    "INSERT INTO spending (correlation_id, at, data) VALUES (%s, %s, %s) "
    "ON CONFLICT (correlation_id) DO NOTHING"
)
SPENDING = "SELECT data FROM spending ORDER BY id DESC LIMIT %s"
"""The newest lines of the spending log (a LIMIT of NULL: all of them)."""


__all__ = ["ADD_SPENDING", "COMPACT", "NEWEST_RUNS", "NEWEST_SUMMARIES", "POSTGRES", "SPENDING", "STATEMENTS"]
