"""The store in PostgreSQL, for a team sharing runs (``MACHINE_STORE=postgresql://...``): the ``Store``
protocol of the SQLite store, on the same layout (``_pg_schema``), with psycopg 3.

One connection per store, in autocommit, used under a lock (as the SQLite store's), so a store may be
shared by the threads of one process; several processes write at once through their own connections and
every write is an upsert. The migrations are applied when it opens. A server it cannot reach, or a
statement it refuses, is a ``StoreError`` naming the store (its password never shown), never a traceback.
psycopg is imported when a store opens: nothing else pays for it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import machine.runs._pg_sql as sql
import machine.runs._views as views
from machine.errors import Fix, NotFoundError, StoreError

from ._names import check_name
from ._pg_schema import migrate
from ._records import Run
from ._rows import ChatSession, RunSummary, SuiteRecord, run_row, summary_row, utc_text
from ._store_url import HIDDEN, mask_passwords


class PostgresStore:
    """The store in a PostgreSQL database (``url``: ``postgresql://user:password@host:port/database``, or
    a libpq key=value connection string)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = mask_passwords(url)
        """How the store is named in messages (the SQLite store's is its file), its password masked."""
        self._lock = threading.Lock()
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise StoreError(
                f"the store {self.path} is in PostgreSQL, which needs psycopg: "
                "pip install 'machine[postgres]'"
            ) from None
        self._errors = psycopg.Error
        try:  # libpq's words for a location it cannot read quote the location, password and all
            self._password = str(conninfo_to_dict(url).get("password") or "")
        except psycopg.Error:
            raise StoreError(
                f"the store {self.path} is not a location PostgreSQL can read: give it as a "
                "postgresql:// URL (user, password, host, port and database, with %-escapes for spaces "
                "and other special characters) or as key=value settings (host=... dbname=... user=...)"
            ) from None
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
            migrate(self._db)
        except psycopg.Error as error:
            raise self._fault(error) from None

    def _fault(self, error: Exception) -> StoreError:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        detail = detail.replace(self._password, HIDDEN) if len(self._password) >= 4 else detail
        detail = mask_passwords(detail)
        return StoreError(
            f"the store {self.path} cannot be used ({detail}): check that the server is running and "
            "reachable and that its URL or settings name a database this user may write"
        )

    @contextlib.contextmanager
    def _using(self) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._db
            except self._errors as error:
                raise self._fault(error) from None

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._using() as db:
            return list(db.execute(statement, params).fetchall())

    def ready_to_write(self) -> None:
        """The server said it could be written when the store opened (the migrations ran)."""

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def put(self, run: Run) -> None:
        row = run_row(run)
        with self._using() as db, db.transaction():
            db.execute(sql.UPSERT_RUN, row)
            db.execute("SELECT nextval('store_writes')")

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all are written, or (on any bad name) none."""
        rows = [run_row(run) for run in runs]
        with self._using() as db, db.transaction():
            with db.cursor() as cursor:
                cursor.executemany(sql.UPSERT_RUN, rows)
            db.execute("SELECT nextval('store_writes')")

    def get(self, run_id: str) -> Run:
        found = self._rows("SELECT data::text FROM runs WHERE id = %s", (run_id,))
        if not found:
            listed = Fix(operation="runs", purpose="lists them")
            raise NotFoundError(f"there is no run {run_id!r} in {self.path}", fixes=[listed])
        return Run.model_validate_json(found[0][0])

    def runs(self, machine: str, limit: int = 20) -> list[Run]:
        return [Run.model_validate_json(d) for (d,) in self._rows(sql.NEWEST_RUNS, (machine, limit))]

    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]:
        return [summary_row(*row) for row in self._rows(sql.NEWEST_SUMMARIES, (machine, limit))]

    def _pages(self, statement: str, head: Sequence[Any]) -> Iterator[Run]:
        after: tuple[str, str] = ("", "")
        while True:
            rows = self._rows(statement, (*head, *after))
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < sql.PAGE_SIZE:
                return

    def iter_runs(self, machine: str | None = None) -> Iterator[Run]:
        if machine is None:
            return self._pages(sql.PAGE_RUNS, ())
        return self._pages(sql.PAGE_MACHINE_RUNS, (machine,))

    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]:
        return self._pages(sql.PAGE_SUITE_RUNS, (suite_id,))

    def iter_learnable(self, machine: str, *, min_score: float | None, marks: Sequence[str]) -> Iterator[Run]:
        """The finished runs of ``machine`` that score at least ``min_score`` or carry one of ``marks``."""
        marked = "data -> 'tags' @> %s::jsonb"
        either = [*(["score >= %s"] if min_score is not None else []), *[marked] * len(marks)]
        statement = (
            f"SELECT created_at, id, data::text FROM runs WHERE machine = %s AND status = 'ok' AND"
            f" ({' OR '.join(either) or 'true'}) AND (created_at, id) > (%s, %s) ORDER BY created_at, id"
            f" LIMIT {sql.PAGE_SIZE}"
        )
        kinds = [json.dumps([{"kind": m}]) for m in marks]
        wanted = [*([min_score] if min_score is not None else []), *kinds]
        return self._pages(statement, (machine, *wanted))

    def iter_newest_with(self, text: str, machine: str | None = None) -> Iterator[Run]:
        """The runs whose JSON (as the SQLite store keeps it) holds ``text``, newest first: a superset."""
        scope = "" if machine is None else "machine = %s AND "
        statement = (
            f"SELECT created_at, id, data::text FROM runs WHERE {scope}strpos({sql.COMPACT}, %s) > 0 AND"
            f" (created_at, id) < (%s, %s) {sql.NEWEST} LIMIT {sql.PAGE_SIZE}"
        )
        before: tuple[str, str] = ("\uffff", "")
        while True:
            rows = self._rows(statement, (*([] if machine is None else [machine]), text, *before))
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                before = (created_at, run_id)
            if len(rows) < sql.PAGE_SIZE:
                return

    def tally(self, machine: str) -> tuple[int, int]:
        [(stored, finished)] = self._rows(
            "SELECT count(*), count(*) FILTER (WHERE status = 'ok') FROM runs WHERE machine = %s", (machine,)
        )
        return int(stored), int(finished)

    def count(self, machine: str | None = None) -> int:
        if machine is None:
            return int(self._rows("SELECT count(*) FROM runs")[0][0])
        return int(self._rows("SELECT count(*) FROM runs WHERE machine = %s", (machine,))[0][0])

    def put_suite(self, suite: SuiteRecord) -> None:
        check_name(suite.machine)
        check_name(suite.id, "suite id")
        with self._using() as db:
            db.execute(
                "INSERT INTO suites (id, machine, key, created_at, data) VALUES (%s, %s, %s, %s, %s::jsonb)"
                " ON CONFLICT (id) DO UPDATE SET machine = excluded.machine, key = excluded.key,"
                " created_at = excluded.created_at, data = excluded.data",
                (suite.id, suite.machine, suite.key, utc_text(suite.created_at), suite.model_dump_json()),
            )

    def get_suite(self, suite_id: str) -> SuiteRecord:
        found = self._rows("SELECT data::text FROM suites WHERE id = %s", (suite_id,))
        if not found:
            raise NotFoundError(f"there is no suite {suite_id!r} in {self.path}")
        return SuiteRecord.model_validate_json(found[0][0])

    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None:
        found = self._rows(
            "SELECT data::text FROM suites WHERE machine = %s AND key = %s ORDER BY created_at DESC, id DESC"
            " LIMIT 1",
            (machine, key),
        )
        return SuiteRecord.model_validate_json(found[0][0]) if found else None

    def put_session(self, session: ChatSession) -> None:
        check_name(session.name, "session name")
        check_name(session.machine)
        with self._using() as db:
            db.execute(
                "INSERT INTO sessions (name, machine, updated_at, data) VALUES (%s, %s, %s, %s::jsonb)"
                " ON CONFLICT (name) DO UPDATE SET machine = excluded.machine,"
                " updated_at = excluded.updated_at, data = excluded.data",
                (session.name, session.machine, utc_text(session.updated_at), session.model_dump_json()),
            )

    def get_session(self, name: str) -> ChatSession:
        found = self._rows("SELECT data::text FROM sessions WHERE name = %s", (name,))
        if not found:
            raise NotFoundError(f"there is no chat session {name!r}")
        return ChatSession.model_validate_json(found[0][0])

    def iter_sessions(self) -> Iterator[ChatSession]:
        rows = self._rows("SELECT data::text FROM sessions ORDER BY name")
        return (ChatSession.model_validate_json(data) for (data,) in rows)

    def iter_suites(self) -> Iterator[SuiteRecord]:
        rows = self._rows("SELECT data::text FROM suites ORDER BY created_at, id")
        return (SuiteRecord.model_validate_json(data) for (data,) in rows)

    def latest_session(self, machine: str) -> ChatSession | None:
        found = self._rows(
            "SELECT data::text FROM sessions WHERE machine = %s ORDER BY updated_at DESC LIMIT 1", (machine,)
        )
        return ChatSession.model_validate_json(found[0][0]) if found else None

    def page(self, chosen: views.RunFilter, *, cursor: str | None = None, limit: int = 50) -> views.RunPage:
        """A page of run summaries matching ``chosen``, newest first, reading at most ``WINDOW`` rows."""
        before = views.parse_cursor(cursor)
        scope, head = ("machine = %s AND ", [chosen.machine]) if chosen.machine else ("", [])
        walk = sql.walk(scope)
        conditions, values = sql.where(chosen)
        where = " AND ".join(conditions) or "true"
        statement = (
            f"SELECT created_at, id, {sql.SUMMARY_FIELDS} FROM ({walk} LIMIT {sql.WINDOW}) AS walked"
            f" WHERE {where} {sql.NEWEST} LIMIT %s"
        )
        rows = self._rows(statement, (*head, *before, *values, limit + 1))
        runs = [summary_row(row[1], *row[2:]) for row in rows[:limit]]
        if len(rows) > limit:
            return views.RunPage(runs=runs, next=views.cursor_of(*rows[limit - 1][:2]))
        last = f"SELECT created_at, id FROM ({walk} LIMIT 1 OFFSET {sql.WINDOW - 1}) AS e"
        edge = self._rows(last, (*head, *before))
        if not edge:
            return views.RunPage(runs=runs)
        more = bool(self._rows(f"SELECT 1 FROM ({walk} LIMIT 1) AS m", (*head, *edge[0])))
        return views.RunPage(runs=runs, next=views.cursor_of(*edge[0]) if more else None, window_full=True)

    def trend(self, machine: str, limit: int = views.TREND_LIMIT) -> list[views.TrendPoint]:
        rows = self._rows(
            f"SELECT created_at, score, (data ->> 'cost_usd')::float8, status FROM runs WHERE machine = %s"
            f" {sql.NEWEST} LIMIT %s",
            (machine, limit),
        )
        return views.points(rows)

    def case_means(
        self, machine: str, *, version: str | None = None, suite_id: str | None = None
    ) -> dict[str, tuple[float, int]]:
        if (version is None) == (suite_id is None):
            raise ValueError("give a version or a suite")
        which, value = ("suite_id = %s", suite_id) if suite_id else ("data ->> 'version' = %s", version)
        scored = "CASE WHEN status = 'error' THEN 0.0 ELSE score END"
        rows = self._rows(
            f"SELECT case_id, avg(s), count(s) FROM (SELECT case_id, {scored} AS s FROM runs WHERE"
            f" machine = %s AND case_id IS NOT NULL AND {which}) AS c GROUP BY case_id",
            (machine, value),
        )
        return {case: (float(mean), int(n)) for case, mean, n in rows if n}

    def choices(self, machine: str) -> views.Choices:
        rows = self._rows(
            f"SELECT case_id, jsonb_build_array(data -> 'model', data -> 'version')::text FROM runs"
            f" WHERE machine = %s {sql.NEWEST} LIMIT {views.TREND_LIMIT}",
            (machine,),
        )
        suites = self._rows(
            "SELECT id, created_at FROM suites WHERE machine = %s ORDER BY created_at DESC, id DESC LIMIT 50",
            (machine,),
        )
        return views.choices_of(rows, suites)

    def machine_counts(self) -> dict[str, int]:
        return {m: int(n) for m, n in self._rows("SELECT machine, count(*) FROM runs GROUP BY machine")}

    def add_spending(self, entries: Iterable[dict[str, Any]]) -> int:
        """Append spending-log lines, oldest first; a line already here (by its correlation id) is left
        as it is. How many were new."""
        added = 0
        with self._using() as db, db.transaction():
            for entry in entries:
                row = (str(entry["correlation_id"]), str(entry.get("at") or ""), json.dumps(entry))
                added += db.execute(sql.ADD_SPENDING, row).rowcount
        return added

    def spending(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The spending log's lines, newest first (the newest ``limit`` of them)."""
        rows = self._rows(sql.SPENDING, (limit,))
        return [dict(row[0]) for row in rows]

    def data_version(self) -> int:
        """A number every write moves on (the ``store_writes`` sequence)."""
        [(value, called)] = self._rows("SELECT last_value, is_called FROM store_writes")
        return int(value) if called else 0


__all__ = ["PostgresStore"]
