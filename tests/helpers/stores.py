"""Reading a store's own database from a test, whichever kind it is."""

from __future__ import annotations

import sqlite3

from machine.runs import SQLiteStore, Store


def rows_of(store: Store, statement: str) -> list[tuple[object, ...]]:
    """What ``statement`` (no parameters) reads from the store's own database, on a connection of its own."""
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            return list(db.execute(statement).fetchall())
    import psycopg

    with psycopg.connect(store.url) as db:
        return list(db.execute(statement).fetchall())
