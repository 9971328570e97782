"""Shared by every test: ``tests/`` on ``sys.path`` (so tests import the helpers beside them), anyio on
asyncio, the fixture of ``needs_bubblewrap``, a PostgreSQL server for the tests that need one (marked
``server``), and, under ``make test-fast``, bytecode kept outside the source folders."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

BYTECODE = (sys.pycache_prefix, sys.dont_write_bytecode)
"""The process's own bytecode settings, which the tests run under."""
COLLECTION_PYCACHE = os.environ.get("MACHINE_TEST_PYCACHE", str(Path(sys.prefix) / "pycache"))
"""Where collection keeps the bytecode of what it imports (the test modules pytest rewrote above all), so
the next run reads it instead of rewriting every test module again: the environment's folder (``.venv``)
unless ``MACHINE_TEST_PYCACHE`` names another, or is empty to keep none."""
if COLLECTION_PYCACHE:
    # Whatever PYTHONDONTWRITEBYTECODE says, and only while the tests are collected: nothing is written
    # beside the sources (machine folders stay free of __pycache__), the tests themselves run under the
    # process's own settings (pytest_collection_finish), and the processes they start under theirs.
    sys.pycache_prefix = COLLECTION_PYCACHE
    sys.dont_write_bytecode = False

from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # noqa: E402  # the fixture of needs_bubblewrap


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_finish() -> None:
    """The tests run under the process's own bytecode settings (MACHINE_TEST_PYCACHE: collection only)."""
    sys.pycache_prefix, sys.dont_write_bytecode = BYTECODE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that asks for the PostgreSQL server (``postgres_url``) is a ``server`` test, which ``make
    test-fast`` leaves out."""
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)


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
