"""The store: runs and named chat sessions in one SQLite file (standard library, WAL).

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
from typing import Protocol

import machine.runs._store_faults as faults
import machine.runs._views as views
from machine.errors import Fix, NotFoundError

from ._files import kept_out_of_git
from ._names import check_name
from ._records import Run
from ._rows import (
    LATEST_SUITE_SQL,
    NEWEST_RUNS_SQL,
    NEWEST_SUMMARIES_SQL,
    PAGE_MACHINE_RUNS_SQL,
    PAGE_RUNS_SQL,
    PAGE_SIZE,
    PAGE_SUITE_RUNS_SQL,
    SCHEMA,
    SUITE_INDEX,
    UPSERT_RUN_SQL,
    ChatSession,
    RunSummary,
    SuiteRecord,
    run_row,
    summary_row,
    utc_text,
)


class Store(Protocol):
    """Where runs, chat sessions and suites are kept; ``SQLiteStore`` is the default."""

    def ready_to_write(self) -> None: ...
    def put(self, run: Run) -> None: ...
    def put_many(self, runs: Iterable[Run]) -> None: ...
    def get(self, run_id: str) -> Run: ...
    def runs(self, machine: str, limit: int = 20) -> list[Run]: ...
    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]: ...
    def iter_runs(self, machine: str | None = None) -> Iterator[Run]: ...
    def put_session(self, session: ChatSession) -> None: ...
    def get_session(self, name: str) -> ChatSession: ...
    def latest_session(self, machine: str) -> ChatSession | None: ...
    def put_suite(self, suite: SuiteRecord) -> None: ...
    def get_suite(self, suite_id: str) -> SuiteRecord: ...
    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None: ...
    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]: ...
    def iter_learnable(
        self, machine: str, *, min_score: float | None, marks: Sequence[str]
    ) -> Iterator[Run]: ...
    def tally(self, machine: str) -> tuple[int, int]: ...
    def iter_newest_with(self, text: str, machine: str | None = None) -> Iterator[Run]: ...
    def count(self, machine: str | None = None) -> int: ...
    def page(
        self, chosen: views.RunFilter, *, cursor: str | None = None, limit: int = 50
    ) -> views.RunPage: ...
    def trend(self, machine: str, limit: int = views.TREND_LIMIT) -> list[views.TrendPoint]: ...
    def case_means(
        self, machine: str, *, version: str | None = None, suite_id: str | None = None
    ) -> dict[str, tuple[float, int]]: ...
    def data_version(self) -> int: ...
    def choices(self, machine: str) -> views.Choices: ...
    def machine_counts(self) -> dict[str, int]: ...
    def iter_sessions(self) -> Iterator[ChatSession]: ...
    def iter_suites(self) -> Iterator[SuiteRecord]: ...
    def close(self) -> None: ...


class SQLiteStore:
    """The store in one SQLite file (WAL, 0600 in a 0700 folder), safe for several processes at once."""

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
        return cls(Path(root) / ".machine" / "store.db")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def put(self, run: Run) -> None:
        """Insert ``run``, or replace the stored run with the same id."""
        row = run_row(run)
        with self._writing() as db:
            db.execute(UPSERT_RUN_SQL, row)

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all are written, or (on any bad name) none."""
        rows = [run_row(run) for run in runs]
        with self._writing() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(UPSERT_RUN_SQL, rows)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def get(self, run_id: str) -> Run:
        with self._reading() as db:
            found = db.execute("SELECT data FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            listed = Fix(operation="runs", purpose="lists them")
            raise NotFoundError(f"there is no run {run_id!r} in {self.path}", fixes=[listed])
        return Run.model_validate_json(found[0])

    def runs(self, machine: str, limit: int = 20) -> list[Run]:
        """The newest ``limit`` runs of ``machine``, newest first."""
        with self._reading() as db:
            rows = db.execute(NEWEST_RUNS_SQL, (machine, limit)).fetchall()
        return [Run.model_validate_json(data) for (data,) in rows]

    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]:
        """``runs`` for a listing: the newest ``limit`` runs of ``machine`` as ``RunSummary`` rows, newest
        first, read from the index and a few JSON fields (no run is validated, no trajectory built)."""
        with self._reading() as db:
            rows = db.execute(NEWEST_SUMMARIES_SQL, (machine, limit)).fetchall()
        return [summary_row(*row) for row in rows]

    def iter_runs(self, machine: str | None = None) -> Iterator[Run]:
        """Every run (of ``machine``), oldest first, read in pages so memory stays flat."""
        after: tuple[str, str] = ("", "")
        while True:
            with self._reading() as db:
                if machine is None:
                    rows = db.execute(PAGE_RUNS_SQL, after).fetchall()
                else:
                    rows = db.execute(PAGE_MACHINE_RUNS_SQL, (machine, *after)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def iter_learnable(self, machine: str, *, min_score: float | None, marks: Sequence[str]) -> Iterator[Run]:
        """The finished runs of ``machine``, oldest first, that score at least ``min_score`` or may carry
        one of ``marks`` (a person's ``good``/``bad``): what export and train read. A superset, decided on
        the row's columns and text before any run is parsed, so runs that cannot qualify cost nothing."""
        either = [*(["score >= ?"] if min_score is not None else []), *["instr(data, ?) > 0"] * len(marks)]
        where = f"machine = ? AND status = 'ok' AND ({' OR '.join(either) or '1'})"
        sql = f"SELECT created_at, id, data FROM runs WHERE {where} AND (created_at, id) > (?, ?)"
        sql += f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
        wanted = [*([min_score] if min_score is not None else []), *(f'"kind":"{m}"' for m in marks)]
        after: tuple[str, str] = ("", "")
        while True:
            with self._reading() as db:
                rows = db.execute(sql, (machine, *wanted, *after)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def iter_newest_with(self, text: str, machine: str | None = None) -> Iterator[Run]:
        """The runs (of ``machine``) whose stored JSON holds ``text``, newest first, in pages along the
        time index: a superset the caller filters (``"observed":true``), read only as far as it asks."""
        where = "instr(data, ?) > 0 AND (created_at, id) < (?, ?)"
        where = where if machine is None else f"machine = ? AND {where}"
        sql = f"SELECT created_at, id, data FROM runs WHERE {where} ORDER BY created_at DESC, id DESC"
        sql += f" LIMIT {PAGE_SIZE}"
        before: tuple[str, str] = ("\uffff", "")
        while True:
            with self._reading() as db:
                rows = db.execute(sql, (*([] if machine is None else [machine]), text, *before)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                before = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def tally(self, machine: str) -> tuple[int, int]:
        """How many runs of ``machine`` are stored, and how many of them finished."""
        with self._reading() as db:
            stored, finished = db.execute(
                "SELECT count(*), coalesce(sum(status = 'ok'), 0) FROM runs WHERE machine = ?", (machine,)
            ).fetchone()
        return int(stored), int(finished)

    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]:
        """Every run of one suite invocation, oldest first, in pages (an index walk, not a scan)."""
        after: tuple[str, str] = ("", "")
        while True:
            with self._reading() as db:
                rows = db.execute(PAGE_SUITE_RUNS_SQL, (suite_id, *after)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def put_suite(self, suite: SuiteRecord) -> None:
        check_name(suite.machine)
        check_name(suite.id, "suite id")
        with self._writing() as db:
            db.execute(
                "INSERT INTO suites (id, machine, key, created_at, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET machine=excluded.machine, key=excluded.key,"
                " created_at=excluded.created_at, data=excluded.data",
                (suite.id, suite.machine, suite.key, utc_text(suite.created_at), suite.model_dump_json()),
            )

    def get_suite(self, suite_id: str) -> SuiteRecord:
        with self._reading() as db:
            found = db.execute("SELECT data FROM suites WHERE id = ?", (suite_id,)).fetchone()
        if found is None:
            raise NotFoundError(f"there is no suite {suite_id!r} in {self.path}")
        return SuiteRecord.model_validate_json(found[0])

    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None:
        """The newest suite of ``machine`` over the same cases and trials (``key``)."""
        with self._reading() as db:
            found = db.execute(LATEST_SUITE_SQL, (machine, key)).fetchone()
        return None if found is None else SuiteRecord.model_validate_json(found[0])

    def count(self, machine: str | None = None) -> int:
        with self._reading() as db:
            if machine is None:
                return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])
            return int(db.execute("SELECT count(*) FROM runs WHERE machine = ?", (machine,)).fetchone()[0])

    def page(self, chosen: views.RunFilter, *, cursor: str | None = None, limit: int = 50) -> views.RunPage:
        """A page of run summaries matching ``chosen``, newest first (``views.page``: bounded reads)."""
        with self._reading() as db:
            return views.page(db, chosen, cursor=cursor, limit=limit)

    def trend(self, machine: str, limit: int = views.TREND_LIMIT) -> list[views.TrendPoint]:
        with self._reading() as db:
            return views.trend(db, machine, limit)

    def case_means(
        self, machine: str, *, version: str | None = None, suite_id: str | None = None
    ) -> dict[str, tuple[float, int]]:
        with self._reading() as db:
            return views.case_means(db, machine, version=version, suite_id=suite_id)

    def choices(self, machine: str) -> views.Choices:
        with self._reading() as db:
            return views.choices(db, machine)

    def machine_counts(self) -> dict[str, int]:
        with self._reading() as db:
            return views.machine_counts(db)

    def data_version(self) -> int:
        """A number that changes whenever another connection (another process) writes the store: a
        watcher polls it to learn of new runs without reading any."""
        with self._reading() as db:
            return int(db.execute("PRAGMA data_version").fetchone()[0])

    def put_session(self, session: ChatSession) -> None:
        check_name(session.name, "session name")
        check_name(session.machine)
        with self._writing() as db:
            db.execute(
                "INSERT INTO sessions (name, machine, updated_at, data) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET machine=excluded.machine, updated_at=excluded.updated_at,"
                " data=excluded.data",
                (session.name, session.machine, utc_text(session.updated_at), session.model_dump_json()),
            )

    def get_session(self, name: str) -> ChatSession:
        with self._reading() as db:
            found = db.execute("SELECT data FROM sessions WHERE name = ?", (name,)).fetchone()
        if found is None:
            raise NotFoundError(f"there is no chat session {name!r}")
        return ChatSession.model_validate_json(found[0])

    def iter_sessions(self) -> Iterator[ChatSession]:
        """Every chat session (there are few: one a name)."""
        with self._reading() as db:
            rows = db.execute("SELECT data FROM sessions ORDER BY name").fetchall()
        return (ChatSession.model_validate_json(data) for (data,) in rows)

    def iter_suites(self) -> Iterator[SuiteRecord]:
        """Every suite record, oldest first."""
        with self._reading() as db:
            rows = db.execute("SELECT data FROM suites ORDER BY created_at, id").fetchall()
        return (SuiteRecord.model_validate_json(data) for (data,) in rows)

    def latest_session(self, machine: str) -> ChatSession | None:
        with self._reading() as db:
            found = db.execute(
                "SELECT data FROM sessions WHERE machine = ? ORDER BY updated_at DESC LIMIT 1", (machine,)
            ).fetchone()
        return None if found is None else ChatSession.model_validate_json(found[0])
