"""Where the command finds its workspace: --workspace before the command or after its arguments,
else $MACHINE_WORKSPACE, else the current folder. Through the real console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

NAMES = ["greet", "greet/loud", "plain"]


def names(stdout: str) -> list[str]:
    return [row["name"] for row in json.loads(stdout)]


def test_console_script_is_installed(machine_cmd: Command) -> None:
    done = machine_cmd("--help")
    assert done.returncode == 0, done.stderr
    for command in ("list", "show", "tree", "run", "runs", "eval", "suite"):
        assert command in done.stdout


def test_workspace_before_the_command(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("--workspace", ws.root, "list", "--json")
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES


def test_workspace_after_the_arguments(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("list", "--json", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES
    done = machine_cmd("run", "plain", "hello", "--harness", "echo", "--json", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["machine"] == "plain"
    assert ws.count() == 1


def test_workspace_between_command_and_arguments(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("run", "--workspace", ws.root, "plain", "hello", "--harness", "echo")
    assert done.returncode == 0, done.stderr
    assert ws.count() == 1


def test_the_later_workspace_wins(ws: WorkspaceFolder, machine_cmd: Command, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = machine_cmd("--workspace", empty, "list", "--json", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES


def test_machine_workspace_env_is_respected(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    env = {"MACHINE_WORKSPACE": str(ws.root)}
    done = machine_cmd("list", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES
    done = machine_cmd("run", "plain", "hello", "--harness", "echo", env=env)
    assert done.returncode == 0, done.stderr
    assert ws.count() == 1


def test_workspace_option_beats_the_env(ws: WorkspaceFolder, machine_cmd: Command, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = machine_cmd("list", "--json", "--workspace", ws.root, env={"MACHINE_WORKSPACE": str(empty)})
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES


def test_current_folder_is_the_default(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    done = machine_cmd("list", "--json", cwd=ws.root)
    assert done.returncode == 0, done.stderr
    assert names(done.stdout) == NAMES


def test_an_empty_folder_has_no_machines(machine_cmd: Command, tmp_path: Path) -> None:
    done = machine_cmd("list")
    assert done.returncode == 0, done.stderr
    assert "no machines in" in done.stdout


def test_a_workspace_that_is_not_a_folder_is_an_error(machine_cmd: Command, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = machine_cmd("list", "--workspace", missing)
    assert done.returncode == 2
    assert f"workspace {missing} is not a folder" in done.stderr
    assert "Traceback" not in done.stderr
