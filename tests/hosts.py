"""The agent hosts from npm that tests drive (opencode, pi, MCP Inspector), as ``make test`` installs them.

``tests/`` has no packages: a test imports this module with ``tests/`` on ``sys.path`` (pytest's rootdir
conftest puts it there). Off CI a missing host skips the test with what to run; under CI=true it fails,
so a broken install step can never pass silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"


def host_binary(name: str) -> Path:
    """The pinned ``name`` binary from ``.venv/npm`` (``make hosts`` installs it)."""
    path = NPM_BIN / name
    if path.exists():
        return path
    message = f"{name} is not installed in {NPM_BIN}: run `make hosts` (or `make test`)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
