"""The agent hosts from npm that tests drive (opencode, pi, MCP Inspector), as ``make test`` installs them.

Off CI a missing host skips the test with what to run; under CI=true it fails, so a broken install step
can never pass silently.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from .env import on_ci

ROOT = Path(__file__).resolve().parents[2]
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"


def host_binary(name: str) -> Path:
    """The pinned ``name`` binary from ``.venv/npm`` (``make hosts`` installs it)."""
    path = NPM_BIN / name
    if path.exists():
        return path
    message = f"{name} is not installed in {NPM_BIN}: run `make hosts` (or `make test`)"
    if on_ci():
        pytest.fail(message)
    pytest.skip(message)


def processes_with(variable: str) -> list[str]:
    """The ids of the processes whose environment holds ``variable`` (``NAME=value...``, a prefix): how a
    test finds what a host left running when the host renames itself or its command line says little."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and variable.encode() in (entry / "environ").read_bytes():
                found.append(entry.name)
    return found
