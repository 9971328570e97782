"""Stored runs are reused only under the same setup: a run records what it depended on beyond the
harness's name and the model (the scripted harness's script by sha256, a chat harness's endpoint URL, a
local model's files by hash), and ``propose`` reuses it only where the harness reports the same now. The
scripted harness replays two real script files here: one that answers in capitals, one that does not."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from helpers.versions import CAPS_MACHINE_PY as MACHINE_PY
from helpers.versions import CAPS_RUBRIC_PY as RUBRIC_PY
from helpers.versions import CASES, make_caps

from machine import open_workspace
from machine.clients.scripted import ScriptedHarness
from machine.runs import setup_of
from machine.versions import propose, versions


def script(root: Path, name: str, *, right: bool) -> Path:
    """A script file that answers each held-out case in capitals (``right``) or with "no idea"."""
    rules = [
        {"match": f"^{c['input']}$", "turns": [{"text": c["input"].upper() if right else "no idea"}]}
        for c in CASES
    ]
    path = root / name
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_runs_made_with_one_script_are_not_reused_under_another(tmp_path: Path) -> None:
    """The break: runs were reused by the harness's name, so the candidate's runs made with a good script
    were counted under a bad one ("7 reused, 0 new") and the report showed the good script's scores."""
    make_caps(tmp_path, MACHINE_PY, RUBRIC_PY)
    good, bad = script(tmp_path, "good.json", right=True), script(tmp_path, "bad.json", right=False)
    ws = open_workspace(tmp_path, harness=ScriptedHarness(good))
    versions(ws, "caps")
    first = (await propose(ws, "caps", model="good", trials=1)).report
    assert (first.before.new, first.after.new, first.after.mean) == (7, 7, 1.0)
    made = list(ws.store.iter_runs("caps"))
    assert {r.setup for r in made} == {f"script sha256:{sha256(good)}"}

    again = (
        await propose(open_workspace(tmp_path, harness=ScriptedHarness(bad)), "caps", model="good")
    ).report
    assert (again.before.reused, again.after.reused) == (0, 0)
    assert (again.before.new, again.after.new) == (21, 21)  # every trial made again, with the bad script
    assert (again.before.mean, again.after.mean) == (0.0, 0.0)


async def test_runs_made_with_the_same_script_are_reused_wherever_it_lies(tmp_path: Path) -> None:
    make_caps(tmp_path, MACHINE_PY, RUBRIC_PY)
    good = script(tmp_path, "good.json", right=True)
    ws = open_workspace(tmp_path, harness=ScriptedHarness(good))
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    copied = tmp_path / "elsewhere" / "same.json"  # the same bytes under another name: the same script
    copied.parent.mkdir()
    shutil.copyfile(good, copied)
    again = (
        await propose(
            open_workspace(tmp_path, harness=ScriptedHarness(copied)), "caps", model="good", trials=1
        )
    ).report
    assert (again.before.reused, again.after.reused, again.before.new, again.after.new) == (7, 7, 0, 0)


async def test_a_run_that_records_no_setup_is_not_reused_where_the_harness_has_one(tmp_path: Path) -> None:
    """Runs stored before runs kept their setup say nothing of the script they were made with."""
    make_caps(tmp_path, MACHINE_PY, RUBRIC_PY)
    good = script(tmp_path, "good.json", right=True)
    ws = open_workspace(tmp_path, harness=ScriptedHarness(good))
    versions(ws, "caps")
    await propose(ws, "caps", model="good", trials=1)
    ws.store.put_many([r.model_copy(update={"setup": None}) for r in ws.store.iter_runs("caps")])
    again = (await propose(ws, "caps", model="good", trials=1)).report
    assert (again.before.reused, again.after.reused, again.after.new) == (0, 0, 7)


def test_a_setup_names_the_endpoint_without_its_key_and_each_machines_own_script(tmp_path: Path) -> None:
    class Endpoint:
        base_url = "https://bob:secret@gateway.example:8443/v1/?key=sk-123"

    class Chat:
        name = "openai"
        endpoint = Endpoint()

    assert setup_of(Chat(), "caps", "m") == "endpoint https://gateway.example:8443/v1"
    assert setup_of(object(), "caps", "m") is None
    folder = tmp_path / "scripts"
    (folder / "caps").mkdir(parents=True)
    own = script(folder / "caps", "script.json", right=True)
    per_machine = ScriptedHarness(folder)
    assert setup_of(per_machine, "caps", "m") == f"script sha256:{sha256(own)}"
    assert setup_of(per_machine, "missing", "m") is None  # its runs fail, saying why
