"""Shell completion through the real ``machine`` command: machine names from the workspace, case ids from
the machine's cases file, and the script ``machine completion bash`` prints working in a real bash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.env import MACHINE_BIN, clean_env

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder


def offered(machine_cmd: Command, words: str, cwd: Path) -> list[str]:
    """What the command offers for the last of ``words`` (click's bash protocol: type,value lines)."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {"COMP_WORDS": words, "COMP_CWORD": str(cword), "_MACHINE_COMPLETE": "bash_complete"}
    result = machine_cmd(env=env, cwd=cwd)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line]


def test_machine_names_complete_from_the_workspace(machine_cmd: Command, ws: WorkspaceFolder) -> None:
    assert offered(machine_cmd, "machine show gr", ws.root) == ["greet", "greet/loud"]
    everything = offered(machine_cmd, "machine suite ", ws.root)
    assert everything[:3] == ["greet", "greet/loud", "plain"]
    assert {"optimizer", "author"} <= set(everything)  # the library's own machines come after
    assert offered(machine_cmd, f"machine --workspace {ws.root} runs pl", ws.root.parent) == ["plain"]
    assert not (ws.root / ".machine").exists()  # a Tab opens no store


def test_case_ids_complete_from_the_cases_file(machine_cmd: Command, ws: WorkspaceFolder) -> None:
    assert offered(machine_cmd, "machine converse greet ", ws.root) == ["ann", "bob", "cat"]
    assert offered(machine_cmd, "machine converse greet b", ws.root) == ["bob"]
    ws.write_json("other.json", [{"id": "zed", "input": "greet zed"}])
    assert offered(machine_cmd, "machine converse greet --cases other.json ", ws.root) == ["zed"]
    ws.write("machines/greet/cases.json", "[{not json")
    assert offered(machine_cmd, "machine converse greet ", ws.root) == []  # the command reports it when run


def test_the_printed_bash_script_completes_in_bash(machine_cmd: Command, ws: WorkspaceFolder) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    script = machine_cmd("completion", "bash", cwd=ws.root)
    assert script.returncode == 0, script.stderr
    probe = f"{script.stdout}\nCOMP_WORDS=(machine show gr); COMP_CWORD=2; _machine_completion machine\n"
    probe += 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    env = clean_env({"PATH": f"{MACHINE_BIN.parent}:/usr/bin:/bin"})
    done = subprocess.run(
        [bash, "--norc", "-c", probe], capture_output=True, text=True, cwd=ws.root, env=env, timeout=60
    )
    assert done.stdout.split() == ["greet", "greet/loud"], done.stderr


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_other_shells_get_their_script(machine_cmd: Command, shell: str) -> None:
    result = machine_cmd("completion", shell)
    assert (
        result.returncode == 0
        and "_MACHINE_COMPLETE" in result.stdout
        and f"{shell}_complete" in result.stdout
    )
