"""The workspace the training tests share: the calc machine, run by the scripted harness
(``helpers.learn_runs``), in the test's temporary folder. A module needing another defines its own ``ws``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.learn_runs import calc_workspace

from machine import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return calc_workspace(tmp_path)
