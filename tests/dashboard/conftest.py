"""The dashboard tests' workspace (a few machines, runs, a suite, a training record, a spending log) and
the real ``machine dashboard`` serving it, one of each per test module (a module may seed its own); and,
for the browser tests, a headless chromium per module and a page per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import chromium, new_page
from helpers.dashboard import Served, dashboard, make_workspace


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[Served]:
    with dashboard(root) as running:
        yield running


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:  # after the workspace is made: its set-up may run a loop
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with new_page(browser) as opened:
        yield opened
