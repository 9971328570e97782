"""The store: runs and named chat sessions in one SQLite file (standard library, WAL).

Every write is an upsert. Listing the newest runs of a machine walks an index, so it costs the
same at a hundred runs and at a million. The directory is private (0700) and the file too (0600):
runs hold prompts and outputs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ._errors import NotFoundError
from ._runs import Message, Run, now
from ._spec import check_name

_SCHEMA = """
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
_SUITE_INDEX = (
    "CREATE INDEX IF NOT EXISTS runs_suite ON runs (suite_id, created_at, id) WHERE suite_id IS NOT NULL"
)

# The statements the store runs, kept here so tests can ask SQLite how it plans them
# (EXPLAIN QUERY PLAN) and prove that no listing scans the table.
UPSERT_RUN_SQL = (
    "INSERT INTO runs (id, machine, created_at, status, case_id, trial, conversation_id, score, data,"
    " suite_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
    " machine=excluded.machine, created_at=excluded.created_at, status=excluded.status,"
    " case_id=excluded.case_id, trial=excluded.trial, conversation_id=excluded.conversation_id,"
    " score=excluded.score, data=excluded.data, suite_id=excluded.suite_id"
)
NEWEST_RUNS_SQL = "SELECT data FROM runs WHERE machine = ? ORDER BY created_at DESC, id DESC LIMIT ?"
INPUT_PREVIEW = 100
"""How many characters of a run's input a ``RunSummary`` keeps."""
# The same walk as NEWEST_RUNS_SQL, reading only the fields a listing shows. One json_extract with several
# paths parses a row's JSON once (a second call would parse it again) and answers a small JSON array,
# which Python parses once. ``rubric_fingerprint`` is a required field of a scorecard: not null iff graded.
NEWEST_SUMMARIES_SQL = (
    "SELECT id, status, case_id, trial, suite_id, score,"
    " json_extract(data, '$.timings.started_at', '$.version', '$.model', '$.harness', '$.cost_usd',"
    " '$.error', '$.scorecard.rubric_fingerprint', '$.scorecard.pass_score', '$.input')"
    " FROM runs WHERE machine = ? ORDER BY created_at DESC, id DESC LIMIT ?"
)
PAGE_SIZE = 500
PAGE_RUNS_SQL = (
    "SELECT created_at, id, data FROM runs WHERE (created_at, id) > (?, ?)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
PAGE_MACHINE_RUNS_SQL = (
    "SELECT created_at, id, data FROM runs WHERE machine = ? AND (created_at, id) > (?, ?)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
PAGE_SUITE_RUNS_SQL = (
    "SELECT created_at, id, data FROM runs WHERE suite_id = ? AND (created_at, id) > (?, ?)"
    f" ORDER BY created_at, id LIMIT {PAGE_SIZE}"
)
LATEST_SUITE_SQL = (
    "SELECT data FROM suites WHERE machine = ? AND key = ? ORDER BY created_at DESC, id DESC LIMIT 1"
)


class ChatSession(BaseModel):
    """A named conversation with a machine: what ``--continue`` resumes."""

    name: str
    machine: str
    conversation_id: str
    history: list[Message] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=now)


class SuiteRecord(BaseModel):
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


@dataclass(slots=True)  # not frozen: a frozen dataclass is built at half the speed
class RunSummary:
    """The fields of a stored run that a listing shows (``machine runs``, the server's ``recent_runs``),
    read without validating the whole run: ``SQLiteStore.summaries``. Each field equals the run's own
    (``created_at`` is ``run.created_at.isoformat()``, ``passed`` is ``run.passed``)."""

    id: str
    created_at: str
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
    input_preview: str
    """The first ``INPUT_PREVIEW`` characters of the input."""

    def as_json(self) -> dict[str, Any]:
        """The row of ``machine runs --json``: the same as ``Run.summary()``."""
        return {
            "id": self.id,
            "created_at": self.created_at,
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "cost_usd": self.cost_usd,
            "case": self.case_id,
            "model": self.model,
        }


class Store(Protocol):
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


class SQLiteStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        folder = self.path.parent
        created = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Tighten the folder the store owns (a workspace's .machine, or one made here), never a
        # folder the caller merely pointed into (``SQLiteStore("store.db")`` must not lock the cwd).
        if created or folder.name == ".machine":
            os.chmod(folder, 0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        for file in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            with contextlib.suppress(FileNotFoundError):  # another process may remove its WAL meanwhile
                os.chmod(file, 0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout=30000")
        self._set_up()

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
                    self._db.executescript(_SCHEMA)
                    columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
                    if "suite_id" not in columns:
                        try:
                            self._db.execute("ALTER TABLE runs ADD COLUMN suite_id TEXT")
                        except sqlite3.OperationalError as error:  # another process added it first
                            if "duplicate column" not in str(error):
                                raise
                    self._db.execute(_SUITE_INDEX)
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
        row = _row(run)
        with self._lock:
            self._db.execute(UPSERT_RUN_SQL, row)

    def put_many(self, runs: Iterable[Run]) -> None:
        """``put`` for many runs in one transaction: all are written, or (on any bad name) none."""
        rows = [_row(run) for run in runs]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(UPSERT_RUN_SQL, rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def get(self, run_id: str) -> Run:
        with self._lock:
            found = self._db.execute("SELECT data FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            raise NotFoundError(f"there is no run {run_id!r} in {self.path}; `machine runs NAME` lists them")
        return Run.model_validate_json(found[0])

    def runs(self, machine: str, limit: int = 20) -> list[Run]:
        """The newest ``limit`` runs of ``machine``, newest first."""
        with self._lock:
            rows = self._db.execute(NEWEST_RUNS_SQL, (machine, limit)).fetchall()
        return [Run.model_validate_json(data) for (data,) in rows]

    def summaries(self, machine: str, limit: int = 20) -> list[RunSummary]:
        """``runs`` for a listing: the newest ``limit`` runs of ``machine`` as ``RunSummary`` rows, newest
        first, read from the index and a few JSON fields (no run is validated, no trajectory built)."""
        with self._lock:
            rows = self._db.execute(NEWEST_SUMMARIES_SQL, (machine, limit)).fetchall()
        return [_summary(*row) for row in rows]

    def iter_runs(self, machine: str | None = None) -> Iterator[Run]:
        """Every run (of ``machine``), oldest first, read in pages so memory stays flat."""
        after: tuple[str, str] = ("", "")
        while True:
            with self._lock:
                if machine is None:
                    rows = self._db.execute(PAGE_RUNS_SQL, after).fetchall()
                else:
                    rows = self._db.execute(PAGE_MACHINE_RUNS_SQL, (machine, *after)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def iter_suite_runs(self, suite_id: str) -> Iterator[Run]:
        """Every run of one suite invocation, oldest first, in pages (an index walk, not a scan)."""
        after: tuple[str, str] = ("", "")
        while True:
            with self._lock:
                rows = self._db.execute(PAGE_SUITE_RUNS_SQL, (suite_id, *after)).fetchall()
            for created_at, run_id, data in rows:
                yield Run.model_validate_json(data)
                after = (created_at, run_id)
            if len(rows) < PAGE_SIZE:
                return

    def put_suite(self, suite: SuiteRecord) -> None:
        check_name(suite.machine)
        check_name(suite.id, "suite id")
        with self._lock:
            self._db.execute(
                "INSERT INTO suites (id, machine, key, created_at, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET machine=excluded.machine, key=excluded.key,"
                " created_at=excluded.created_at, data=excluded.data",
                (suite.id, suite.machine, suite.key, _utc(suite.created_at), suite.model_dump_json()),
            )

    def get_suite(self, suite_id: str) -> SuiteRecord:
        with self._lock:
            found = self._db.execute("SELECT data FROM suites WHERE id = ?", (suite_id,)).fetchone()
        if found is None:
            raise NotFoundError(f"there is no suite {suite_id!r} in {self.path}")
        return SuiteRecord.model_validate_json(found[0])

    def latest_suite(self, machine: str, key: str) -> SuiteRecord | None:
        """The newest suite of ``machine`` over the same cases and trials (``key``)."""
        with self._lock:
            found = self._db.execute(LATEST_SUITE_SQL, (machine, key)).fetchone()
        return None if found is None else SuiteRecord.model_validate_json(found[0])

    def count(self, machine: str | None = None) -> int:
        with self._lock:
            if machine is None:
                return int(self._db.execute("SELECT count(*) FROM runs").fetchone()[0])
            return int(
                self._db.execute("SELECT count(*) FROM runs WHERE machine = ?", (machine,)).fetchone()[0]
            )

    def put_session(self, session: ChatSession) -> None:
        check_name(session.name, "session name")
        check_name(session.machine)
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions (name, machine, updated_at, data) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET machine=excluded.machine, updated_at=excluded.updated_at,"
                " data=excluded.data",
                (session.name, session.machine, _utc(session.updated_at), session.model_dump_json()),
            )

    def get_session(self, name: str) -> ChatSession:
        with self._lock:
            found = self._db.execute("SELECT data FROM sessions WHERE name = ?", (name,)).fetchone()
        if found is None:
            raise NotFoundError(f"there is no chat session {name!r}")
        return ChatSession.model_validate_json(found[0])

    def latest_session(self, machine: str) -> ChatSession | None:
        with self._lock:
            found = self._db.execute(
                "SELECT data FROM sessions WHERE machine = ? ORDER BY updated_at DESC LIMIT 1", (machine,)
            ).fetchone()
        return None if found is None else ChatSession.model_validate_json(found[0])


def _row(
    run: Run,
) -> tuple[str, str, str, str, str | None, int | None, str | None, float | None, str, str | None]:
    """The columns of one run; refuses a bad machine name or run id before anything is written."""
    check_name(run.machine)
    check_name(run.id, "run id")
    return (
        run.id,
        run.machine,
        _utc(run.created_at),
        run.status,
        run.case_id,
        run.trial,
        run.conversation_id,
        run.score,
        run.model_dump_json(),
        run.suite_id,
    )


def _summary(
    run_id: str,
    status: str,
    case_id: str | None,
    trial: int | None,
    suite_id: str | None,
    score: float | None,
    fields: str,
) -> RunSummary:
    """One row of ``NEWEST_SUMMARIES_SQL`` as a ``RunSummary``."""
    started_at, version, model, harness, cost_usd, error, fingerprint, pass_score, text = json.loads(fields)
    graded = fingerprint is not None
    passed = None
    if graded and score is not None:
        passed = score >= (1.0 if pass_score is None else pass_score) - 1e-9  # as Scorecard.passed
    return RunSummary(
        id=run_id,
        created_at=datetime.fromisoformat(started_at).isoformat(),  # as Run.created_at.isoformat()
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
        error=error,
        input_preview=(text or "")[:INPUT_PREVIEW],
    )


def _utc(moment: datetime) -> str:
    """Fixed-width UTC text, so string order is time order."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
