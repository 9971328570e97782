"""Which store a workspace keeps its runs in: ``MACHINE_STORE`` (or ``--store``), a location a registered
store claims (a ``postgresql://`` URL, or libpq's key=value settings, for a team's shared PostgreSQL) or a
SQLite file's path, else the workspace's own ``.machine/store.db``. The SQLite store is the embedded
default, registered like any other (``SQLITE``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from machine._backends import build

from ._backends import STORES, StoreEntry, default_store, store_claiming
from ._store import SQLiteStore, Store
from ._store_url import is_conninfo

STORE_ENV = "MACHINE_STORE"
SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database (a ``postgresql://`` URL, or libpq's key=value
    settings, ``host=db dbname=runs``), not a SQLite file."""
    return location.startswith(SCHEMES) or is_conninfo(location)


@runtime_checkable
class SharedSpending(Protocol):
    """A store that keeps the spending log itself (PostgreSQL), so everyone who uses it sees one log."""

    def add_spending(self, entries: Iterable[dict[str, Any]]) -> int: ...

    def spending(self, limit: int | None = None) -> list[dict[str, Any]]: ...


def open_store(location: str | Path | None = None, *, data_dir: Path | None = None) -> Store:
    """The store at ``location`` (a URL or a file), else at ``MACHINE_STORE``, else ``data_dir/store.db``."""
    where = str(location) if location is not None else os.environ.get(STORE_ENV, "").strip()
    if not where and data_dir is None:
        raise ValueError("open_store needs a location, MACHINE_STORE, or the workspace's data folder")
    claimed = store_claiming(where) if where else None
    name, entry = (claimed, STORES[claimed]) if claimed is not None else default_store()
    where = where or str(Path(data_dir or ".") / "store.db")
    return build("store", name, entry, lambda: entry.make(where))


def _sqlite(location: str) -> Store:
    return SQLiteStore(Path(location).expanduser())


SQLITE = StoreEntry(_sqlite, default=True, makes="machine.runs:SQLiteStore")
"""The embedded default: a SQLite file, for every location no other store claims."""


__all__ = ["SQLITE", "STORE_ENV", "SharedSpending", "is_postgres", "open_store"]
