"""Shared by every test: ``tests/`` on ``sys.path`` (so tests import the helpers beside them), anyio on
asyncio, and the fixture of ``needs_bubblewrap``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.bwrap import bubblewrap_or_fail as bubblewrap_or_fail  # the fixture of needs_bubblewrap


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
