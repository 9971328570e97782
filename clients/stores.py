"""Every store this package ships beside the embedded SQLite default, as the entries its
``machine.stores`` entry points name. Light to import: the factory imports its room when a store opens."""

from __future__ import annotations

from machine.runs import Store, StoreEntry, is_postgres


def _postgres(location: str) -> Store:
    from .postgres import PostgresStore

    return PostgresStore(location)


POSTGRES = StoreEntry(
    _postgres, claims=is_postgres, extra="postgres", makes="machine.clients.postgres:PostgresStore"
)
"""A team's shared store in PostgreSQL: claims ``postgresql://`` URLs and libpq's key=value settings.
psycopg is checked by the store itself when it opens (``modules`` is left empty, so its message stands)."""

__all__ = ["POSTGRES"]
