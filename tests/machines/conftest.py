"""The workspace the machines' tests share: the repository's own machines, with the runs' data in the test's
temporary folder and the judges' settings unset, so judged criteria stay UNSCORED whatever the person
running the tests has set."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.env import REPO

from machine import Workspace, open_workspace

JUDGES = ("MACHINE_JUDGE_MODEL", "TINKER_API_KEY", "OPENROUTER_API_KEY")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    for setting in JUDGES:
        monkeypatch.delenv(setting, raising=False)
    return open_workspace(REPO, data_dir=tmp_path / ".machine")  # never writes into the repository
