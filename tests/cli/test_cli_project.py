"""`machine run NAME` started from another folder works on that folder's files (its own project),
while the workspace keeps its machines and store; a run started in the workspace gets a fresh sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MACHINE_BIN = Path(sys.executable).parent / "machine"

MACHINE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric
from machine.sandboxes.tools import read_file, write_file

rubric = define_rubric({"wrote": "Wrote the note."})
machine = define_machine(
    name="scribe",
    intent="Keeps notes in the folder it works in.",
    instructions="Write what you are told into note.txt.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"wrote": check("wrote", lambda run: True)}),
    tools=[read_file, write_file],
)
"""

SCRIPT = {
    "rules": [
        {
            "match": "read",
            "turns": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "plan.txt"}}]},
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "tooling/.machine/store.db"}}]},
                {"text": "read"},
            ],
        },
        {
            "match": ".*",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "note.txt", "content": "hello"}}
                    ]
                },
                {"text": "written"},
            ],
        },
    ]
}


def machine(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHINE_")}
    return subprocess.run(
        [str(MACHINE_BIN), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def workspace(root: Path) -> tuple[Path, Path]:
    (root / "machines" / "scribe").mkdir(parents=True)
    (root / "machines" / "scribe" / "machine.py").write_text(MACHINE_PY)
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT))
    return root, script


def test_a_run_from_another_folder_writes_there(tmp_path: Path) -> None:
    ws, script = workspace(tmp_path / "ws")
    project = tmp_path / "project"
    project.mkdir()
    done = machine(
        "run",
        "scribe",
        "note hello",
        "--harness",
        "scripted",
        "--script",
        script,
        "--workspace",
        ws,
        "--edits",
        "auto",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    assert (project / "note.txt").read_text() == "hello"
    assert not (ws / "note.txt").exists()
    assert (ws / ".machine" / "store.db").exists()  # the run is stored in the workspace
    said = (
        f"scribe's tools work on the real files of {project.resolve()}, not on a copy: what they write stays"
    )
    assert done.stderr.count(said) == 1  # said once, before the run
    assert (ws / ".machine" / ".gitignore").read_text().splitlines()[-1] == "*"  # never committed


def test_a_run_in_the_workspace_gets_a_fresh_sandbox(tmp_path: Path) -> None:
    ws, script = workspace(tmp_path / "ws")
    done = machine("run", "scribe", "note hello", "--harness", "scripted", "--script", script, cwd=ws)
    assert done.returncode == 0, done.stderr
    assert not (ws / "note.txt").exists()
    assert list((ws / ".machine" / "sandboxes").iterdir()) == []  # made for the run, removed after
    assert "real files" not in done.stderr


def test_a_store_inside_the_project_is_hidden_from_the_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    ws, script = workspace(project / "tooling")  # the workspace lives inside the project
    (project / "plan.txt").write_text("ship it")
    done = machine(
        "run",
        "scribe",
        "read",
        "--json",
        "--harness",
        "scripted",
        "--script",
        script,
        "--workspace",
        ws,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    results = [m for m in json.loads(done.stdout)["trajectory"] if m["role"] == "tool"]
    assert "ship it" in results[0]["content"] and not results[0]["is_error"]
    assert results[1]["is_error"] and "hidden" in results[1]["content"]


def test_the_machines_inside_the_project_are_hidden_from_the_run(tmp_path: Path) -> None:
    """A run's model writing machine code would pass for the person's own: no run can touch machines/."""
    project = tmp_path / "project"
    ws, _ = workspace(project / "tooling")
    planted = "tooling/machines/evil/machine.py"
    writes = {"tool_calls": [{"name": "write_file", "arguments": {"path": planted, "content": "boom"}}]}
    script = ws / "planting.json"
    script.write_text(json.dumps({"rules": [{"match": ".*", "turns": [writes, {"text": "done"}]}]}))
    done = machine(
        "run", "scribe", "plant", "--json", "--harness", "scripted", "--script", script, "--workspace", ws,
        "--edits", "auto", cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [result] = [m for m in json.loads(done.stdout)["trajectory"] if m["role"] == "tool"]
    assert result["is_error"] and "hidden" in result["content"]
    assert not (project / planted).exists()


def test_a_run_from_the_home_folder_is_refused(tmp_path: Path) -> None:
    ws, script = workspace(tmp_path / "ws")
    home = tmp_path / "home"
    home.mkdir()
    env_home = {**os.environ, "HOME": str(home)}
    done = subprocess.run(
        [
            str(MACHINE_BIN),
            "run",
            "scribe",
            "note hello",
            "--harness",
            "scripted",
            "--script",
            str(script),
            "--workspace",
            str(ws),
        ],
        cwd=home,
        env={k: v for k, v in env_home.items() if not k.startswith("MACHINE_")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "whole home folder" in done.stderr
    assert not (home / "note.txt").exists()
