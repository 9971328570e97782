"""The stores the store's tests run against: the SQLite file, and the real PostgreSQL server of the test
worker (``postgres_url``) with a schema of its own for each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.postgres import fresh_schema

from machine.runs import SQLiteStore, Store

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.server)]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The store under test, of each kind."""
    if request.param == "sqlite":
        opened: Store = SQLiteStore.in_workspace(tmp_path)
    else:
        from machine.clients.postgres import PostgresStore

        opened = PostgresStore(fresh_schema(request.getfixturevalue("postgres_url")))
    yield opened
    opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore.in_workspace(tmp_path)
    yield opened
    opened.close()
