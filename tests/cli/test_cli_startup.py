"""What starting costs, pinned without timing anything: a bare ``import machine`` imports none of its
subpackages, ``machine --help`` loads click and the command group alone, and ``machine list`` never
loads the learning, measuring or versions layers or a model library, each checked in a fresh
interpreter. The group's listing names every command it can load, each under its
own name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from machine.cli._app import COMMANDS, cli

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "torch",
    "transformers",
    "peft",
    "tinker",
    "tinker_cookbook",
    "openai",
    "mcp",
    "uvicorn",
    "starlette",
)
PROBE = """\
import json, sys
{code}
heavy = {heavy!r}
wanted = [m for m in sys.modules if m.startswith(("machine", *heavy))]
print(json.dumps(sorted(wanted)))
"""


def loaded(code: str, tmp_path: Path, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = PROBE.format(code=code, heavy=heavy)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_a_bare_import_imports_no_subpackage(tmp_path: Path) -> None:
    assert loaded("import machine", tmp_path, (*HEAVY, "pydantic", "rich", "httpx")) == [
        "machine",
        "machine._lazy",
    ]


def test_help_loads_the_group_and_nothing_heavy(tmp_path: Path) -> None:
    code = "from machine.cli import main\nsys.argv = ['machine', '--help']\n"
    code += "try:\n    main()\nexcept SystemExit:\n    pass"
    found = loaded(code, tmp_path, (*HEAVY, "rich", "pydantic"))
    assert found == [
        "machine",
        "machine._lazy",
        "machine.cli",
        "machine.cli._app",
        "machine.cli._stop",
        "machine.cli._usage",
        "machine.cli._workspace_option",
    ]


def test_list_loads_no_learning_no_model_library_and_no_http_client(tmp_path: Path) -> None:
    """The repository's machines include ``assistant``, whose web_fetch tool loads httpx on its first
    fetch, not when the machine is listed."""
    code = (
        f"from machine.cli import main\nsys.argv = ['machine', 'list', '--workspace', {str(REPO)!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code"
    )
    found = loaded(code, tmp_path, (*HEAVY, "httpx", "httpcore", "sqlite3"))
    assert "machine.ops._listing" in found  # it did list
    assert "machine.sandboxes.tools.web" in found  # and loaded a machine with web_fetch
    unneeded = ("machine.learn", "machine.measure", "machine.versions", "machine.spec._book", *HEAVY)
    unneeded += ("httpx", "httpcore")
    # nor what only a run, a spending command or `machine show` uses: the store, provenance, the spending
    # policy, the trainer's records, show's models
    unneeded += (
        "machine.runs._store",
        "machine.runs._rows",
        "machine.runs._provenance",
        "machine.training._trainer",
    )
    unneeded += ("machine.ops._spend", "machine.ops._policy", "machine.ops._describe", "sqlite3")
    assert not [m for m in found if m.startswith(unneeded)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_command_loads_under_its_own_name(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert isinstance(command, click.Command) and command.name == name
    assert COMMANDS[name][2].endswith(".") and len(COMMANDS[name][2]) <= 60


def test_an_unknown_command_is_refused_with_the_nearest(tmp_path: Path) -> None:
    code = "import sys\nfrom machine.cli import main\nsys.argv = ['machine', 'lsit']\nmain()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
    )
    assert done.returncode == 2 and "no such command 'lsit' (did you mean 'list'?)" in done.stderr
