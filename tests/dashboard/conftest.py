"""The dashboard tests' workspace (a few machines, runs, a suite, a training record, a spending log) and
the real ``machine dashboard`` serving it, one of each per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.dashboard import Served, dashboard, make_workspace


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running
