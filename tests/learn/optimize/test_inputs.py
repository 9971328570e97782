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


def untouched(ws: Workspace, harness: Keyed, folder: Path, before: dict[str, bytes]) -> None:
    assert harness.seen == []
    assert list(ws.store.iter_runs("shout")) == []
    assert snapshot(folder) == before


RANGES = {"trials": "from 1 to 20", "rounds": "from 1 to 10", "candidates": "from 1 to 8"}
"""Each number's bounds, as OptimizeOptions holds them and the message says them."""


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("trials", 0), ("rounds", 0), ("candidates", 0), ("candidates", -2), ("trials", True),
        ("rounds", 1.5), ("trials", 21), ("candidates", 9),
    ],
)  # fmt: skip
async def test_numbers_out_of_bounds_are_refused(tmp_path: Path, argument: str, value: Any) -> None:
    folder = make_shout(tmp_path)
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    before = snapshot(folder)
    with pytest.raises(BadInputError) as caught:
        await optimize(ws, "shout", **{argument: value})
    assert (
        str(caught.value)
        == f"{argument} must be a whole number {RANGES[argument]}, got {value!r}; pass {argument}=N"
    )
    assert caught.value.fixes and caught.value.fixes[0].argument == argument
    untouched(ws, harness, folder, before)
    assert not (folder / "versions.json").exists()


async def test_a_negative_min_z_is_refused(tmp_path: Path) -> None:
    make_shout(tmp_path)
    harness = Keyed()
    with pytest.raises(BadInputError, match=r"min_z must be a number of at least 0, got -1"):
        await optimize(open_workspace(tmp_path, harness=harness), "shout", min_z=-1)
    assert harness.seen == []


SEEN = (
    "held-out cases must be unseen by the optimizer: name the cases to show and the held-out ones apart, and "
    "take any case out of one of them; pass cases='cases.json' for the cases shown or pass "
    "holdout='holdout.json'"
)


@pytest.mark.parametrize(
    ("held", "named"),
    [
        (
            [{"id": "ann", "input": "someone else", "expected": "SOMEONE ELSE"}],
            "case 'ann' of cases.json is also among the held-out cases (holdout.json)",
        ),
        (
            [{"id": "h-bob", "input": "Bob!", "expected": "BOB"}],
            "case 'bob' of cases.json asks what a held-out case of holdout.json asks ('bob', compared "
            "without case, spacing or punctuation)",
        ),
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
    assert str(caught.value) == f"machine 'shout': {named}; {SEEN}"
    untouched(ws, harness, folder, before)


async def test_swapping_the_cases_and_the_held_out_cases_is_refused(tmp_path: Path) -> None:
    """The break: with the two files swapped, the optimizer was shown the held-out cases."""
    folder = make_shout(tmp_path)
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    (folder / "copy.json").write_text((folder / "holdout.json").read_text(encoding="utf-8"))
    before = snapshot(folder)
    with pytest.raises(BadInputError) as caught:
        await optimize(ws, "shout", cases="holdout.json", holdout="cases.json")
    said = "the cases the optimizer would be shown are its held-out cases (holdout.json)"
    assert str(caught.value) == f"machine 'shout': {said}; {SEEN}"
    # a copy of holdout.json under another name is its content all the same
    with pytest.raises(BadInputError, match=r"case 'held-amelia' of copy\.json is also among the held-out"):
        await optimize(ws, "shout", cases="copy.json", holdout="cases.json")
    with pytest.raises(
        BadInputError, match=r"the cases and the held-out cases are the same file \(cases\.json\)"
    ):
        await optimize(ws, "shout", cases="cases.json", holdout=str(folder / "cases.json"))
    untouched(ws, harness, folder, before)


@pytest.mark.parametrize("where", ["absolute", "dotdot", "link"])
async def test_cases_files_outside_the_machines_folder_are_refused(tmp_path: Path, where: str) -> None:
    """MCP optimize read any file on disk as cases or held-out cases; every face now reads only files in
    the machine's own folder (a link leading out is outside)."""
    folder = make_shout(tmp_path)
    outside = tmp_path / "elsewhere.json"
    write(outside, CASES)
    if where == "link":
        (folder / "linked.json").symlink_to(outside)
    named = {"absolute": str(outside), "dotdot": "../../elsewhere.json", "link": "linked.json"}[where]
    harness = Keyed([block("Say it in CAPITALS.")])
    ws = open_workspace(tmp_path, harness=harness)
    versions(ws, "shout")
    before = snapshot(folder)
    for argument, what in (("cases", "cases"), ("holdout", "held-out")):
        with pytest.raises(BadInputError) as caught:
            await optimize(ws, "shout", **{argument: named})
        assert str(caught.value).startswith(
            f"{what} file {named!r} is not a cases file of machine 'shout': cases are read from the "
            f"machine's own folder ({folder}) only; name a .json file there (available: cases.json, "
            "holdout.json"
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
    with pytest.raises(BadInputError, match=r"case 'cat' of cases\.json asks what a held-out case of"):
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
