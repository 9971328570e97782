"""A candidate written into the machine's files (what optimize keeps): write_candidate, and commit and
revert on it. revert puts the live version's files back and leaves the candidate pending; commit then
writes it again and makes it live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.optimize import LIVE, MACHINE_PY, Keyed, block, make_shout, snapshot

from machine import BadInputError, CommitRefused, DefinitionError, GateReport, Workspace, open_workspace
from machine.learn import optimize
from machine.versions import commit, current, revert, versions, write_candidate

KEPT = "Say the input back in CAPITALS, whatever it is."


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    make_shout(tmp_path)
    return open_workspace(tmp_path, harness=Keyed([block(KEPT)]))


def statuses(ws: Workspace) -> list[tuple[str, str]]:
    return [(v.label, v.status) for v in versions(ws, "shout")]


async def kept(ws: Workspace) -> GateReport:
    result = await optimize(ws, "shout", trials=1, rounds=1, candidates=1)
    assert result.candidate is not None
    return result.candidate.report


async def test_revert_of_a_written_candidate_writes_the_live_files_back_and_keeps_it_pending(
    ws: Workspace, tmp_path: Path
) -> None:
    folder = ws.machines_dir / "shout"
    versions(ws, "shout")
    live_files = {k: v for k, v in snapshot(folder).items() if k != "versions.json"}
    await kept(ws)
    assert (folder / "instructions.md").read_bytes() == (KEPT + "\n").encode()
    written = current(ws, "shout")
    assert written is not None and (written.label, written.status) == ("v2", "pending")

    back = revert(ws, "shout")
    assert back.label == "v1"
    assert (folder / "instructions.md").read_bytes() == (LIVE + "\n").encode()
    assert {k: v for k, v in snapshot(folder).items() if k != "versions.json"} == live_files
    assert statuses(ws) == [("v1", "live"), ("v2", "pending")]
    assert ws.load("shout").instructions == LIVE
    assert versions(ws, "shout")[0].live and [v.number for v in versions(ws, "shout") if v.live] == [1]

    made = commit(ws, "shout")
    assert made.label == "v2"
    assert (folder / "instructions.md").read_bytes() == (KEPT + "\n").encode()
    assert statuses(ws) == [("v1", "retired"), ("v2", "live")]
    assert ws.load("shout").instructions == KEPT
    book = json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    assert book["live_history"] == [1, 2]


async def test_commit_of_a_candidate_already_in_the_files_needs_no_rewrite(ws: Workspace) -> None:
    folder = ws.machines_dir / "shout"
    await kept(ws)
    before = (folder / "instructions.md").read_bytes()
    assert commit(ws, "shout").label == "v2"
    assert (folder / "instructions.md").read_bytes() == before
    back = revert(ws, "shout")  # now a committed version: revert steps back along the live history
    assert back.label == "v1" and (folder / "instructions.md").read_bytes() == (LIVE + "\n").encode()
    assert statuses(ws) == [("v1", "live"), ("v2", "retired")]


async def test_a_written_candidate_that_did_not_pass_is_refused_and_stays_written(ws: Workspace) -> None:
    folder = ws.machines_dir / "shout"
    report = await kept(ws)
    revert(ws, "shout")
    failed = report.model_copy(update={"outcome": "not passed", "passed": False, "decision": "it lost"})
    version = write_candidate(ws, "shout", instructions=KEPT, report=failed)
    assert version.label == "v2"  # the same pending candidate, its report replaced
    with pytest.raises(CommitRefused, match=r"candidate v2 .* did not pass the promotion gate \(it lost\)"):
        commit(ws, "shout")
    assert (folder / "instructions.md").read_bytes() == (KEPT + "\n").encode()
    assert statuses(ws) == [("v1", "live"), ("v2", "pending")]
    assert commit(ws, "shout", force=True).forced


async def test_write_candidate_refuses_what_it_cannot_write(ws: Workspace) -> None:
    folder = ws.machines_dir / "shout"
    report = await kept(ws)
    revert(ws, "shout")
    before = snapshot(folder)
    with pytest.raises(BadInputError, match="a candidate's instructions must not be empty"):
        write_candidate(ws, "shout", instructions=" \n", report=report)
    (folder / "instructions.md").write_text("Edited by hand.\n", encoding="utf-8")
    with pytest.raises(BadInputError, match="cannot have a candidate written into its files"):
        write_candidate(ws, "shout", instructions="Anything.", report=report)
    (folder / "instructions.md").write_bytes(before["instructions.md"])
    assert snapshot(folder) == before


async def test_write_candidate_leaves_a_machine_that_ignores_instructions_md_as_it_was(
    tmp_path: Path,
) -> None:
    make_shout(tmp_path / "a")
    ws = open_workspace(tmp_path / "a", harness=Keyed([block(KEPT)]))
    report = await kept(ws)
    fixed = MACHINE_PY.replace("instructions=instructions_from(__file__)", f'instructions="{LIVE}"')
    make_shout(tmp_path / "b", machine_py=fixed)
    other = open_workspace(tmp_path / "b", harness=Keyed())
    folder = other.machines_dir / "shout"
    versions(other, "shout")
    before = snapshot(folder)
    with pytest.raises(DefinitionError, match=r"does not take its instructions from instructions\.md"):
        write_candidate(other, "shout", instructions=KEPT, report=report)
    assert snapshot(folder) == before
