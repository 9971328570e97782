"""What the specialize tests share: the model stand-in (``Keyed``, answering by the keys of its script) and a
workspace on the shout machine (``helpers.optimize``) whose sample runs it has made: "ANN" passes, the
rest say "no idea"."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.optimize import Keyed, make_shout

from machine import Workspace, open_workspace, run_suite


@pytest.fixture
def harness() -> Keyed:
    return Keyed()


@pytest.fixture
async def ws(tmp_path: Path, harness: Keyed) -> Workspace:
    make_shout(tmp_path)
    ws = open_workspace(tmp_path, harness=harness)
    await run_suite(ws, ws.load("shout"), ws.cases("shout"))
    return ws
