"""What a person meets first: ``--version``, an unknown machine named before any harness asks for its
key, and a ``--script`` no harness but the scripted one would read refused rather than ignored."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]


def test_version(machine_cmd: Command) -> None:
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        done = machine_cmd(flag)
        assert done.returncode == 0 and done.stdout == f"machine {version('machine')}\n", done


@pytest.mark.parametrize(
    "command", [["run", "nope", "hi"], ["suite", "nope"], ["train", "nope"], ["compare", "nope"]]
)
def test_an_unknown_machine_is_named_before_a_harness_key_is_asked_for(
    ws: WorkspaceFolder, machine_cmd: Command, command: list[str]
) -> None:
    done = machine_cmd(*command, "--harness", "tinker", "--workspace", ws.root, env={"TINKER_API_KEY": ""})
    assert done.returncode == 2
    assert "there is no machine 'nope'" in done.stderr and "TINKER_API_KEY" not in done.stderr, done.stderr


def test_a_script_the_harness_would_ignore_is_refused(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke(
        "run", "greet", "greet ann", "--harness", "echo", "--script", ws.script, "--workspace", ws.root
    )
    assert result.exit_code == 2
    assert "--script is replayed by the scripted harness only" in result.stderr
    assert "--harness scripted" in result.stderr
    assert ws.count() == 0


def test_the_store_folder_is_never_committed(ws: WorkspaceFolder, invoke: Invoke) -> None:
    result = invoke("run", "greet", "greet ann", "--harness", "echo", "--workspace", ws.root)
    assert result.exit_code == 0, result.stderr
    subprocess.run(["git", "init", "-q", str(ws.root)], check=True)
    added = subprocess.run(
        ["git", "-C", str(ws.root), "add", "-A", "--dry-run"], capture_output=True, text=True, check=True
    ).stdout
    assert "machines/greet/machine.py" in added and ".machine" not in added


def test_every_command_has_examples_and_every_option_a_description() -> None:
    import click

    from machine.cli._app import cli
    from machine.cli._help_examples import EXAMPLES

    ctx = click.Context(cli, info_name="machine")
    undescribed: list[str] = []
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None and name in EXAMPLES
        commands = [command, *getattr(command, "commands", {}).values()]
        for each in commands:
            shown = each.get_help(click.Context(each, info_name=name, parent=ctx))
            assert "Examples:\n" in shown and shown.rstrip().endswith(EXAMPLES[name][-1]), name
            undescribed += [
                f"{name} {p.opts[0]}" for p in each.params if isinstance(p, click.Option) and not p.help
            ]
    assert undescribed == []


def test_every_example_parses() -> None:
    """Each example names options the command has, with values it accepts (it is parsed, not run)."""
    import shlex

    import click

    from machine.cli._app import cli
    from machine.cli._help_examples import EXAMPLES

    for name, lines in EXAMPLES.items():
        for line in lines:
            words = shlex.split(line.split("#")[0])
            assert words[:2] == ["machine", name], line
            command = cli.get_command(click.Context(cli), name)
            assert command is not None
            args = words[2:]
            if isinstance(command, click.Group):
                command, args = command.commands[args[0]], args[1:]
            with command.make_context(name, args, resilient_parsing=False) as made:
                assert made.params is not None, line
