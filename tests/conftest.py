"""Shared by every test: ``tests/`` on ``sys.path`` (so tests import the helpers beside them), anyio on
asyncio, the fixture of ``needs_bubblewrap``, and a PostgreSQL server for the tests that need one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback, one per test worker, started when a test first asks for it
    (``helpers.postgres``); skipped where none can run, and failing instead under CI."""
    from helpers.postgres import missing, server

    why = missing()
    if why is not None:
        pytest.skip(why)
    with server() as url:
        yield url
