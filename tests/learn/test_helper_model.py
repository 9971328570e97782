"""A learner whose helper machine (the optimizer, the author) would run on a model the workspace's harness
cannot run is refused before anything is measured: on the local harness, the helpers' default model is not
a ``local:`` one, and each of its calls would fail only after the live version had been run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.env import REPO

from machine import BadInputError, open_workspace
from machine.learn import draft_rubric, optimize, specialize

REFUSED = "model 'thinkingmachines/Inkling' cannot run on the local harness, which runs only local: models"


async def test_the_helpers_default_model_is_refused_on_the_local_harness(tmp_path: Path) -> None:
    shutil.copytree(REPO / "machines" / "signoff", tmp_path / "machines" / "signoff")
    ws = open_workspace(tmp_path, harness="local")
    with pytest.raises(BadInputError, match=f"the optimizer machine's {REFUSED}") as refused:
        await optimize(ws, "signoff", rounds=1)
    assert [(f.argument, f.value) for f in refused.value.fixes] == [
        ("optimizer_model", "local:NAME"),
        ("harness", "HARNESS"),
    ]
    with pytest.raises(BadInputError, match=f"the author machine's {REFUSED}"):
        await draft_rubric(ws, "signoff")
    with pytest.raises(BadInputError, match=f"the author machine's {REFUSED}"):
        await specialize(ws, "signoff", focus="questions about the weather")
    assert list(ws.store.iter_runs("signoff")) == []  # nothing was run
