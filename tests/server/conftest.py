"""The server tests' fixture: a fresh copy of red to serve (``helpers.server_workspace``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.env import SCRUBBED
from helpers.server_workspace import Folder, copy_red


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Folder:
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    return copy_red(tmp_path / "ws")
