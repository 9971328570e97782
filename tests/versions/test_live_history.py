"""Revert follows the live history: it goes back to the version that was live before the live one, steps
further back when repeated, and never returns to a version already reverted away from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.versions import CAPS_MACHINE_PY as MACHINE_PY
from helpers.versions import CAPS_RUBRIC_PY as RUBRIC_PY
from helpers.versions import ByModel, make_caps

from machine import BadInputError, Workspace, open_workspace
from machine.versions import commit, propose, revert, update, versions


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    make_caps(tmp_path, MACHINE_PY, RUBRIC_PY)
    return open_workspace(tmp_path, harness=ByModel())


def history(folder: Path) -> list[int]:
    return list(json.loads((folder / "versions.json").read_text(encoding="utf-8"))["live_history"])


def live(ws: Workspace) -> str:
    [found] = [v.label for v in versions(ws, "caps") if v.live]
    return found


async def test_revert_after_a_revert_and_a_commit_goes_back_to_the_version_live_before(ws: Workspace) -> None:
    folder = ws.machines_dir / "caps"
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    assert commit(ws, "caps").label == "v2"
    assert revert(ws, "caps").label == "v1"  # v2 reverted away from
    await propose(ws, "caps", model="mostly", trials=1)
    assert commit(ws, "caps").label == "v3"
    assert revert(ws, "caps").label == "v1"  # not v2
    assert live(ws) == "v1" and ws.load("caps").model == "bad"
    assert not (folder / "model.json").exists()  # v1 had none
    assert history(folder) == [1]
    with pytest.raises(BadInputError, match=r"no version that was live before v1.*live history: v1"):
        revert(ws, "caps")


async def test_repeated_reverts_walk_back_and_a_chosen_version_joins_the_history(ws: Workspace) -> None:
    folder = ws.machines_dir / "caps"
    versions(ws, "caps")
    update(ws, "caps", model="mostly")  # v2
    update(ws, "caps", model="good")  # v3
    assert history(folder) == [1, 2, 3]
    assert [revert(ws, "caps").label, revert(ws, "caps").label] == ["v2", "v1"]
    assert revert(ws, "caps", to="v3").label == "v3"  # by name: a change like any other
    assert history(folder) == [1, 3]
    assert revert(ws, "caps").label == "v1"
    assert ws.load("caps").model == "bad"


def test_a_versions_file_without_a_live_history_is_read_and_kept(ws: Workspace) -> None:
    folder = ws.machines_dir / "caps"
    versions(ws, "caps")
    update(ws, "caps", model="mostly")
    update(ws, "caps", model="good")
    older = json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    del older["live_history"]  # as written before the history was kept
    (folder / "versions.json").write_text(json.dumps(older), encoding="utf-8")
    assert [(v.label, v.status) for v in versions(ws, "caps")] == [
        ("v1", "retired"),
        ("v2", "retired"),
        ("v3", "live"),
    ]
    assert revert(ws, "caps").label == "v2"  # the versions live once, by number, as before
    assert history(folder) == [1, 2]
