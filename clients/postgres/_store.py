"""The store in PostgreSQL, for a team sharing runs (``MACHINE_STORE=postgresql://...``): the ``Store``
protocol of the SQLite store, on the same layout (``_schema``), with psycopg 3. Its reads are the shared
``SQLStore``'s, on the statements of the ``POSTGRES`` dialect (``_sql``); here is what only a server does.

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

from machine.errors import StoreError
from machine.runs import Run
from machine.runs.storage import HIDDEN, SQLStore, mask_passwords, run_row

from . import _sql as pg_sql
from ._schema import migrate


class PostgresStore(SQLStore):
    """The store in a PostgreSQL database (``url``: ``postgresql://user:password@host:port/database``, or
    a libpq key=value connection string)."""

    sql = pg_sql.STATEMENTS

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

    @property
    def location(self) -> str:
        return self.path

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._using() as db:
            return list(db.execute(statement, params).fetchall())

    def _write(self, statement: str, params: Sequence[Any]) -> None:
        with self._using() as db:
            db.execute(statement, params)

    def ready_to_write(self) -> None:
        """The server said it could be written when the store opened (the migrations ran)."""

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def put(self, run: Run) -> None:
        """Insert ``run``, or replace the stored run with the same id (and move ``data_version`` on)."""
        row = run_row(run)
        with self._using() as db, db.transaction():
            db.execute(self.sql.upsert_run, row)
            db.execute("SELECT nextval('store_writes')")

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all are written, or (on any bad name) none."""
        rows = [run_row(run) for run in runs]
        with self._using() as db, db.transaction():
            with db.cursor() as cursor:
                cursor.executemany(self.sql.upsert_run, rows)
            db.execute("SELECT nextval('store_writes')")

    def add_spending(self, entries: Iterable[dict[str, Any]]) -> int:
        """Append spending-log lines, oldest first; a line already here (by its correlation id) is left
        as it is. How many were new."""
        added = 0
        with self._using() as db, db.transaction():
            for entry in entries:
                row = (str(entry["correlation_id"]), str(entry.get("at") or ""), json.dumps(entry))
                added += db.execute(pg_sql.ADD_SPENDING, row).rowcount
        return added

    def spending(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The spending log's lines, newest first (the newest ``limit`` of them)."""
        rows = self._rows(pg_sql.SPENDING, (limit,))
        return [dict(row[0]) for row in rows]

    def data_version(self) -> int:
        """A number every write moves on (the ``store_writes`` sequence)."""
        [(value, called)] = self._rows("SELECT last_value, is_called FROM store_writes")
        return int(value) if called else 0


__all__ = ["PostgresStore"]
