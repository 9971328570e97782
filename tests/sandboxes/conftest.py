"""Sandboxes on real folders, real bubblewrap and real processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from machine.sandboxes import LocalSandbox


@pytest.fixture
def sandbox(tmp_path: Path) -> LocalSandbox:
    """An isolated sandbox; only for tests whose module skips or fails where bubblewrap does not work."""
    box = LocalSandbox.create(tmp_path / "sandboxes", "run-1")
    assert box.isolated
    return box


@pytest.fixture
def plain(tmp_path: Path) -> LocalSandbox:
    """A sandbox that is deliberately not isolated: what a machine without bubblewrap gets."""
    return LocalSandbox.create(tmp_path / "sandboxes", "run-plain", isolate=False)
