"""Shared by every test: ``tests/`` on ``sys.path`` (so tests import the helpers beside them) and anyio on
asyncio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
