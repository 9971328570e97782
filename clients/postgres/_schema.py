"""The PostgreSQL store's schema, as numbered migrations applied in order when a store opens.

Each migration runs once, in its own transaction, under an advisory lock, so two processes opening a new
database at once apply it once between them; ``schema_migrations`` records what was applied. The layout
is the SQLite store's: the same columns and indexes (the newest runs of a machine are an index walk), the
run itself as ``data`` (JSONB), and ``created_at`` as the same fixed-width UTC text, so cursors and order
are the same in both stores.
"""

from __future__ import annotations

from typing import Any

LOCK = 7_262_001
"""The advisory lock migrations take (any number no other program of the database uses)."""

MIGRATIONS: list[str] = [
    # 1: runs, chat sessions and suites, with the SQLite store's indexes
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        machine TEXT NOT NULL,
        created_at TEXT NOT NULL,
        status TEXT NOT NULL,
        case_id TEXT,
        trial INTEGER,
        conversation_id TEXT,
        score DOUBLE PRECISION,
        data JSONB NOT NULL,
        suite_id TEXT
    );
    CREATE INDEX runs_newest ON runs (machine, created_at DESC, id DESC);
    CREATE INDEX runs_created ON runs (created_at, id);
    CREATE INDEX runs_conversation ON runs (conversation_id) WHERE conversation_id IS NOT NULL;
    CREATE INDEX runs_suite ON runs (suite_id, created_at, id) WHERE suite_id IS NOT NULL;
    CREATE TABLE sessions (
        name TEXT PRIMARY KEY,
        machine TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data JSONB NOT NULL
    );
    CREATE INDEX sessions_newest ON sessions (machine, updated_at DESC);
    CREATE TABLE suites (
        id TEXT PRIMARY KEY,
        machine TEXT NOT NULL,
        key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        data JSONB NOT NULL
    );
    CREATE INDEX suites_newest ON suites (machine, key, created_at DESC, id DESC);
    """,
    # 2: a number every write moves on, so a watcher learns of new runs without reading any
    """
    CREATE SEQUENCE store_writes;
    """,
    # 3: the spending log, shared by everyone who uses the store (a line once, by its correlation id)
    """
    CREATE TABLE spending (
        id BIGSERIAL PRIMARY KEY,
        correlation_id TEXT NOT NULL UNIQUE,
        at TEXT NOT NULL,
        data JSONB NOT NULL
    );
    """,
]


def migrate(connection: Any) -> list[int]:
    """Apply the migrations ``connection``'s database lacks, in order; the numbers applied."""
    applied: list[int] = []
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
        for number, sql in enumerate(MIGRATIONS, start=1):
            if number in done:
                continue
            connection.execute(sql)
            connection.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))
            applied.append(number)
    return applied


__all__ = ["MIGRATIONS", "migrate"]
