"""What optimize refuses before it spends anything: each refusal a MachineError that names what is wrong,
with no model called, no run stored and no file of the machine changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.optimize import CASES, HOLDOUT, MACHINE_PY, Keyed, block, make_shout, snapshot, write

from machine import BadInputError, MachineError, Workspace, open_workspace
from machine.learn import optimize
from machine.versions import versions

pytestmark = pytest.mark.anyio


def untouched(ws: Workspace, harness: Keyed, folder: Path, before: dict[str, bytes]) -> None:
    assert harness.seen == []
    assert list(ws.store.iter_runs("shout")) == []
    assert snapshot(folder) == before


@pytest.mark.parametrize(
    ("argument", "value"),
    [("trials", 0), ("rounds", 0), ("candidates", 0), ("candidates", -2), ("trials", True), ("rounds", 1.5)],
)
async def test_numbers_below_one_are_refused(tmp_path: Path, argument: str, value: Any) -> None:
    folder = make_shout(tmp_path)
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    before = snapshot(folder)
    with pytest.raises(BadInputError) as caught:
        await optimize(ws, "shout", **{argument: value})
    assert (
        str(caught.value)
        == f"{argument} must be a whole number of at least 1, got {value!r}; pass {argument}=N"
    )
    assert caught.value.fixes and caught.value.fixes[0].argument == argument
    untouched(ws, harness, folder, before)
    assert not (folder / "versions.json").exists()


async def test_a_negative_min_z_is_refused(tmp_path: Path) -> None:
    make_shout(tmp_path)
    harness = Keyed()
    with pytest.raises(BadInputError, match=r"min_z must not be negative, got -1"):
        await optimize(open_workspace(tmp_path, harness=harness), "shout", min_z=-1)
    assert harness.seen == []


@pytest.mark.parametrize(
    ("held", "named"),
    [
        ([{"id": "ann", "input": "someone else", "expected": "SOMEONE ELSE"}], "case 'ann'"),
        ([{"id": "h-bob", "input": "bob", "expected": "BOB"}], "a case input"),
    ],
    ids=["same id", "same input"],
)
async def test_held_out_cases_that_are_among_the_cases_are_refused(
    tmp_path: Path, held: list[dict[str, str]], named: str
) -> None:
    folder = make_shout(tmp_path)
    write(folder / "holdout.json", HOLDOUT + held)
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    before = snapshot(folder)
    with pytest.raises(BadInputError) as caught:
        await optimize(ws, "shout")
    assert str(caught.value) == (
        f"machine 'shout': {named} is both among the cases and the held-out cases; held-out cases must "
        "be unseen: take it out of one of them"
    )
    untouched(ws, harness, folder, before)


async def test_held_out_cases_given_in_python_are_checked_too(tmp_path: Path) -> None:
    from machine import Case

    folder = make_shout(tmp_path)
    harness = Keyed()
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    before = snapshot(folder)
    given = [Case(id="x", input=CASES[2]["input"])]
    with pytest.raises(BadInputError, match="a case input is both among the cases and the held-out"):
        await optimize(ws, "shout", holdout=given)
    with pytest.raises(BadInputError, match="the held-out cases of machine 'shout' are empty"):
        await optimize(ws, "shout", holdout=[])
    with pytest.raises(BadInputError, match="machine 'shout' has no cases to optimize on"):
        await optimize(ws, "shout", cases=[])
    untouched(ws, harness, folder, before)


@pytest.mark.parametrize("has_file", [True, False], ids=["other text in the file", "no file"])
async def test_a_machine_whose_instructions_are_not_read_from_instructions_md_is_refused(
    tmp_path: Path, has_file: bool
) -> None:
    fixed = MACHINE_PY.replace("instructions=instructions_from(__file__)", 'instructions="Fixed in code."')
    folder = make_shout(tmp_path, machine_py=fixed)
    if not has_file:
        (folder / "instructions.md").unlink()
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    before = snapshot(folder)
    with pytest.raises(MachineError) as caught:
        await optimize(ws, "shout")
    said = str(caught.value)
    assert f"{folder / 'machine.py'} does not take its instructions from {folder / 'instructions.md'}" in said
    assert "declare instructions=instructions_from(__file__)" in said
    untouched(ws, harness, folder, before)


async def test_a_machine_whose_files_are_not_its_live_version_is_refused(tmp_path: Path) -> None:
    folder = make_shout(tmp_path)
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    (folder / "instructions.md").write_text("Edited by hand.\n", encoding="utf-8")
    before = snapshot(folder)
    with pytest.raises(BadInputError) as caught:
        await optimize(ws, "shout")
    assert str(caught.value).startswith(
        "machine 'shout': its files (own instructions, model, rubric) match no recorded version, not the "
        "live version v1, so it cannot be optimized"
    )
    untouched(ws, harness, folder, before)
    book = json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    assert [v["status"] for v in book["versions"]] == ["live"]
