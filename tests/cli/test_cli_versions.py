"""``machine versions``, ``propose``, ``commit`` and ``revert`` on the test workspace. The scripted harness
replays by input whatever the model, so a candidate here never beats the live version: these tests show
the text, the exit codes and the refusals. Which candidate wins, and commit accepting it, is shown with a
harness that answers by model in tests/core/test_versions.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result
from helpers.env import on_ci
from helpers.when import Folder

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]

ECHOER_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, instructions_from, model_from

rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="echoer",
    intent="Repeat the input.",
    instructions=instructions_from(__file__),
    model=model_from(__file__, "echo"),
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
)
"""


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def scripted(ws: WorkspaceFolder) -> list[str]:
    return ["--harness", "scripted", "--script", str(ws.script), "--workspace", str(ws.root)]


def test_versions_records_v1_and_lists(ws: WorkspaceFolder, invoke: Invoke) -> None:
    first = ok(invoke("versions", "greet", "--workspace", ws.root))
    assert first.stdout.startswith("v1   live     Qwen/Qwen3.8-27B  instructions text sha256 ")
    assert (ws.machines / "greet" / "versions.json").exists()
    assert "recorded greet as it is now as v1 (live), in machines/greet/versions.json" in first.stderr
    again = ok(invoke("versions", "greet", "--workspace", ws.root))
    assert again.stdout == first.stdout and "recorded" not in again.stderr  # said once, when it wrote
    data: Any = json.loads(ok(invoke("versions", "greet", "--json", "--workspace", ws.root)).stdout)
    assert data["current"] == 1 and data["live_history"] == [1]  # a version is its number throughout
    assert [(v["number"], v["status"]) for v in data["versions"]] == [(1, "live")]


def test_versions_says_when_the_files_match_no_version(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ok(invoke("versions", "greet", "--workspace", ws.root))
    machine_py = ws.machines / "greet" / "machine.py"
    machine_py.write_text(machine_py.read_text().replace("briefly.", "very briefly."), encoding="utf-8")
    out = ok(invoke("versions", "greet", "--workspace", ws.root)).stdout
    assert "match no recorded version" in out and "'unrecorded'" in out and "--record" in out
    out = ok(invoke("versions", "greet", "--record", "--note", "briefer", "--workspace", ws.root)).stdout
    assert "v2 is live" in out and "briefer" in out
    assert "match no recorded version" not in out


def test_propose_then_commit_is_refused(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("machines/greet/holdout.json", (ws.machines / "greet" / "cases.json").read_text())
    machine_py = (ws.machines / "greet" / "machine.py").read_bytes()
    result = ok(invoke("propose", "greet", "--model", "Qwen/Other", "--trials", "2", *scripted(ws)))
    out = result.stdout
    assert "greet: candidate v2 (Qwen/Other) against live v1 (Qwen/Qwen3.8-27B)" in out
    assert "data: 3 held-out cases" in out and "2 trials each" in out
    assert "live v1: 6 runs (0 reused, 0 regraded, 6 new)" in out
    assert "greets" in out and "brief" in out
    assert "candidate - live: +0.000" in out
    # greet's judge criterion "warm" is UNSCORED on every run here (no Tinker key): not measured, with why
    assert "0 with nothing scored, 6 UNSCORED grades" in out
    assert "NOT MEASURED on live v1 and candidate v2" in out
    assert "6 UNSCORED on candidate v2, most often:\n        6x the judge call failed:" in out
    assert "TINKER_API_KEY" in out
    assert "decision: NOT MEASURED: criterion 'warm' has no scored grade on live v1 (6 UNSCORED)" in out
    assert "was not measured on every criterion: `machine commit greet` refuses it (--force overrides)" in out
    assert "spent $" in result.stderr
    assert (ws.machines / "greet" / "machine.py").read_bytes() == machine_py
    assert not (ws.machines / "greet" / "model.json").exists()

    refused = invoke("commit", "greet", "--workspace", ws.root)
    assert refused.exit_code == 2
    assert "decision: NOT MEASURED" in refused.stdout and "6x the judge call failed" in refused.stdout
    assert "was not measured on every criterion" in refused.stderr and "--force" in refused.stderr
    assert refused.stderr.count("\n") == 1  # one error line
    assert not (ws.machines / "greet" / "model.json").exists()

    # greet names its model in machine.py, so even --force cannot make model.json take effect
    forced = invoke("commit", "greet", "--force", "--workspace", ws.root)
    assert forced.exit_code == 2
    assert "does not take its model from model.json" in forced.stderr and "model_from" in forced.stderr
    assert not (ws.machines / "greet" / "model.json").exists()
    listing = ok(invoke("versions", "greet", "--workspace", ws.root)).stdout
    assert "v2   pending  Qwen/Other" in listing and "gate: not measured" in listing

    # a second proposal of the same model reuses every stored run
    again = ok(invoke("propose", "greet", "--model", "Qwen/Other", "--trials", "2", *scripted(ws))).stdout
    assert "live v1: 6 runs (6 reused, 0 regraded, 0 new)" in again
    assert "candidate v2: 6 runs (6 reused, 0 regraded, 0 new)" in again


def test_propose_errors(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("propose", "greet", *scripted(ws))
    assert result.exit_code == 2 and "needs the candidate's model" in result.stderr
    result = invoke("propose", "greet", "--model", "Qwen/Other", *scripted(ws))
    assert result.exit_code == 2 and "no held-out cases" in result.stderr and "holdout.json" in result.stderr


def test_a_min_z_below_1_is_refused_unless_a_weak_gate_is_allowed(
    ws: WorkspaceFolder, invoke: Invoke
) -> None:
    """The break: ``--min-z 0.5`` was taken as given on every command that sets the gate."""
    ws.write("machines/greet/holdout.json", (ws.machines / "greet" / "cases.json").read_text())
    weak = ("--min-z", "0.5")
    for command in (["propose", "greet", "--model", "Qwen/Other"], ["optimize", "greet"], ["train", "greet"]):
        refused = invoke(*command, *weak, *scripted(ws))
        assert refused.exit_code == 2, (command, refused.stdout, refused.stderr)
        assert refused.stderr == (
            "error: min_z 0.5 is below 1: a gate that passes a gain of fewer than 1 standard errors passes "
            "what chance alone gives about one time in 3; pass --min-z 2 for the usual gate or pass "
            "--allow-weak-gate to use the weak gate anyway\n"
        ), command
    assert not (ws.machines / "greet" / "versions.json").exists()  # refused before anything was done
    allow = ("--allow-weak-gate", "--trials", "1")
    allowed = ok(invoke("propose", "greet", "--model", "Qwen/Other", *weak, *allow, *scripted(ws)))
    assert "(gate: z >= 0.5)" in allowed.stdout


def test_commit_force_and_revert(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("machines/echoer/machine.py", ECHOER_PY)
    ws.write("machines/echoer/instructions.md", "Repeat the input.\n")
    ws.write(
        "machines/echoer/holdout.json", json.dumps([{"id": "a", "input": "hi"}, {"id": "b", "input": "yo"}])
    )
    folder = ws.machines / "echoer"
    ok(invoke("versions", "echoer", "--workspace", ws.root))
    out = ok(invoke("propose", "echoer", "--model", "other", "--trials", "1", *scripted(ws))).stdout
    assert "NOT PASSED" in out
    assert invoke("commit", "echoer", "--workspace", ws.root).exit_code == 2
    out = ok(invoke("commit", "echoer", "--force", "--workspace", ws.root)).stdout
    assert "v2 is live (forced past the gate): model other" in out
    assert json.loads((folder / "model.json").read_text()) == {"model": "other"}
    listing = ok(invoke("versions", "echoer", "--workspace", ws.root)).stdout
    assert "v1   retired" in listing and "v2   live" in listing and "committed with --force" in listing

    out = ok(invoke("revert", "echoer", "--workspace", ws.root)).stdout
    assert "v1 is live again: model echo" in out
    assert not (folder / "model.json").exists()
    result = invoke("revert", "echoer", "--workspace", ws.root)
    assert result.exit_code == 2 and "no version that was live before v1" in result.stderr
    assert "--to VERSION" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None and not on_ci(), reason="git is not installed")
def test_commit_goes_live_where_the_candidate_was_measured(tmp_path: Path, machine_cmd: Command) -> None:
    """The break: getting-started's `machine commit dates` after an optimize on the scripted harness
    exited 2, since commit's target was tinker; MACHINE_HARNESS (where runs default to) does not move it,
    and --harness does."""
    when = Folder(tmp_path / "ws", machine_cmd)
    when.optimize()
    refused = machine_cmd("commit", "when", "--harness", "tinker", "--workspace", when.root)
    assert refused.returncode == 2
    assert "was measured on harness 'scripted' with model 'Qwen/Qwen3.8-27B', but would run on harness " in (
        refused.stderr
    )
    done = machine_cmd("commit", "when", "--workspace", when.root, env={"MACHINE_HARNESS": "tinker"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "v2 is live: model Qwen/Qwen3.8-27B, held in instructions.md; measured on the scripted harness\n"
    )
    listing = machine_cmd("versions", "when", "--workspace", when.root).stdout
    assert "v2   live" in listing and "committed with --force" not in listing


def test_commit_without_a_candidate(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("commit", "greet", "--workspace", ws.root)
    assert done.returncode == 2
    assert "has no pending candidate" in done.stderr and "machine propose greet --model" in done.stderr


def test_revert_follows_the_live_history(ws: WorkspaceFolder, invoke: Invoke) -> None:
    ws.write("machines/echoer/machine.py", ECHOER_PY)
    ws.write("machines/echoer/instructions.md", "Repeat the input.\n")
    ws.write("machines/echoer/holdout.json", json.dumps([{"id": "a", "input": "hi"}]))
    folder = ws.machines / "echoer"
    for model in ("second", "third"):  # commit v2, revert to v1, commit v3
        ok(invoke("propose", "echoer", "--model", model, "--trials", "1", *scripted(ws)))
        ok(invoke("commit", "echoer", "--force", "--workspace", ws.root))
        if model == "second":
            reverted = ok(invoke("revert", "echoer", "--workspace", ws.root)).stdout
            assert reverted.startswith("v1 is live again")
    listing = ok(invoke("versions", "echoer", "--workspace", ws.root)).stdout
    assert "live history: v1 -> v3 (revert goes back along it)" in listing
    data: Any = json.loads(ok(invoke("versions", "echoer", "--json", "--workspace", ws.root)).stdout)
    assert data["live_history"] == [1, 3]
    out = ok(invoke("revert", "echoer", "--workspace", ws.root)).stdout
    assert out == "v1 is live again: model echo; its files were written back\n"  # not v2
    assert not (folder / "model.json").exists()
    again = invoke("revert", "echoer", "--workspace", ws.root)
    assert again.exit_code == 2
    assert again.stderr.startswith("error: machine 'echoer' has no version that was live before v1")
