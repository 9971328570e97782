"""The embedded store: runs, chat sessions and suites in one SQLite file (standard library, WAL). Its
reads are the shared ``SQLStore``'s, on the statements of the ``SQLITE`` dialect; here is what only a
file does: open it privately, check it before the first write, write in WAL, tell of other writers.

Every write is an upsert. Listing the newest runs of a machine walks an index, so it costs the
same at a hundred runs and at a million. The directory is private (0700) and the file too (0600):
runs hold prompts and outputs.

A store that cannot be used is refused in words (``StoreError``), never a traceback: a folder, a file that
is not a database, or a read-only one when it is opened; a damaged one (``PRAGMA quick_check``) before the
first write, so nothing is ever written into damaged pages; a full disk when a write fails.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import machine.runs._store_faults as faults

from ._dialect import SQLITE
from ._files import kept_out_of_git
from ._records import Run
from ._rows import SCHEMA, SUITE_INDEX, run_row
from ._sql_store import SQLStore
from ._statements import Statements
from ._store_protocols import Store


class SQLiteStore(SQLStore):
    """The store in one SQLite file (WAL, 0600 in a 0700 folder), safe for several processes at once."""

    sql = Statements(SQLITE)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._checked = False
        if self.path.is_dir():
            raise faults.not_a_file(self.path)
        try:
            self._make_file()
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        except OSError as error:
            raise faults.from_os(self.path, error) from None
        except sqlite3.Error as error:
            raise faults.from_sqlite(self.path, error) from None
        try:
            self._db.execute("PRAGMA busy_timeout=30000")
            self._set_up()
        except sqlite3.Error as error:
            self._db.close()
            raise faults.from_sqlite(self.path, error) from None

    def _make_file(self) -> None:
        """The folder (0700) and the file (0600), made if missing; the WAL and index files kept private."""
        folder = self.path.parent
        created = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if faults.is_read_only(self.path):
            raise faults.read_only(self.path)
        # Tighten the folder the store owns (a workspace's .machine, or one made here), never a
        # folder the caller merely pointed into (``SQLiteStore("store.db")`` must not lock the cwd).
        if created or folder.name == ".machine":
            os.chmod(folder, 0o700)
            kept_out_of_git(folder)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        for file in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            with contextlib.suppress(FileNotFoundError):  # another process may remove its WAL meanwhile
                os.chmod(file, 0o600)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; SQLite's failures said as the store's (``StoreError``)."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as error:
                raise faults.from_sqlite(self.path, error) from None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """``_reading`` for a write, which first checks the store once (``ready_to_write``)."""
        self.ready_to_write()
        with self._reading() as db:
            yield db

    def ready_to_write(self) -> None:
        """Refuse a store that is read-only or damaged before anything is written to it. The check reads
        every page once (``PRAGMA quick_check``: about 3 ms per thousand runs), so it runs once per store
        opened, before its first write; reading commands never pay for it."""
        if self._checked:
            return
        if faults.is_read_only(self.path):
            raise faults.read_only(self.path)
        with self._reading() as db:
            problems = [row[0] for row in db.execute("PRAGMA quick_check(5)").fetchall()]
        if problems != ["ok"]:
            raise faults.damaged(self.path, "; ".join(problems))
        self._checked = True

    def _set_up(self) -> None:
        """WAL mode and the schema. Switching a new file to WAL can report 'locked' without waiting
        while another process does the same, so that step is retried for a bounded time."""
        deadline = time.monotonic() + 30.0
        while True:
            try:
                # A run's row is a few KB: 8 KiB pages waste less room than 4 KiB ones (new stores only).
                self._db.execute("PRAGMA page_size=8192")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                with self._lock:
                    self._db.executescript(SCHEMA)
                    columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
                    if "suite_id" not in columns:
                        try:
                            self._db.execute("ALTER TABLE runs ADD COLUMN suite_id TEXT")
                        except sqlite3.OperationalError as error:  # another process added it first
                            if "duplicate column" not in str(error):
                                raise
                    self._db.execute(SUITE_INDEX)
                return
            except sqlite3.OperationalError as error:
                if ("locked" not in str(error) and "busy" not in str(error)) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @classmethod
    def in_workspace(cls, root: str | Path) -> SQLiteStore:
        """The store of the workspace at ``root``: ``.machine/store.db``."""
        return cls(Path(root) / ".machine" / "store.db")

    @property
    def location(self) -> str:
        return str(self.path)

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._reading() as db:
            return db.execute(statement, params).fetchall()

    def _write(self, statement: str, params: Sequence[Any]) -> None:
        with self._writing() as db:
            db.execute(statement, params)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def put(self, run: Run) -> None:
        """Insert ``run``, or replace the stored run with the same id."""
        self._write(self.sql.upsert_run, run_row(run))

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all are written, or (on any bad name) none."""
        rows = [run_row(run) for run in runs]
        with self._writing() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(self.sql.upsert_run, rows)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def data_version(self) -> int:
        """A number that changes whenever another connection (another process) writes the store: a
        watcher polls it to learn of new runs without reading any."""
        with self._reading() as db:
            return int(db.execute("PRAGMA data_version").fetchone()[0])


__all__ = ["SQLiteStore", "Store"]
