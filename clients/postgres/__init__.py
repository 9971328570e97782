"""A team's shared store in PostgreSQL (``MACHINE_STORE=postgresql://...``, the ``postgres`` extra): the
same rows, pages and answers as the embedded SQLite store, one spending log for everyone who uses it."""

from __future__ import annotations

from ._store import PostgresStore

__all__ = ["PostgresStore"]
