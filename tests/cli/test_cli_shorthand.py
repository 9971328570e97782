"""``machine NAME``, the seed's shorthand for ``machine run NAME``, through the installed console script:
a machine's name where no command has it runs the machine with every option passed on, wherever
``--workspace`` is given; a command keeps its name; a name that is neither is refused with the nearest."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Command, WorkspaceFolder

RUN_LINE = re.compile(r"\[run \d{8}-\d{6}-[0-9a-f]+ ")

SHOW_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="show",
    intent="A machine named like a command.",
    instructions="Repeat the input.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
)
"""


@pytest.mark.slow
def test_a_machines_name_runs_it_as_run_does_with_its_options(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    """The break: `machine greet "hi"` was "no such command 'greet'"."""
    options = ("--harness", "scripted", "--script", str(ws.script), "--eval")
    short = machine_cmd("greet", "hi", *options, "--workspace", ws.root)
    assert short.returncode == 0, short.stderr
    long = machine_cmd("run", "greet", "hi", *options, "--workspace", ws.root)
    assert long.returncode == 0, long.stderr
    assert "hello there" in short.stdout and "says_hello" in short.stdout  # graded: --eval reached run
    assert RUN_LINE.sub("[run ID ", short.stdout) == RUN_LINE.sub("[run ID ", long.stdout)
    assert [r.input for r in ws.runs("greet")] == ["hi", "hi"]
    before = machine_cmd("--workspace", ws.root, "greet", "hi", *options)  # the group's option first
    assert before.returncode == 0 and "hello there" in before.stdout, before.stderr
    nested = machine_cmd("greet/loud", "hi", "--harness", "echo", f"--workspace={ws.root}")
    assert nested.returncode == 0 and "via echo" in nested.stdout, nested.stderr


def test_a_command_keeps_its_name_over_a_machine_of_that_name(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    ws.write("machines/show/machine.py", SHOW_PY)
    shown = machine_cmd("show", "show", "--workspace", ws.root)
    assert shown.returncode == 0 and "A machine named like a command." in shown.stdout, shown.stderr
    bare = machine_cmd("show", "--workspace", ws.root)
    assert bare.returncode == 2 and "error: missing argument 'NAME'" in bare.stderr


def test_a_name_that_is_neither_is_refused_with_the_nearest(
    ws: WorkspaceFolder, machine_cmd: Command, tmp_path: Path
) -> None:
    typo = machine_cmd("gret", "hi", "--workspace", ws.root)
    assert typo.returncode == 2 and not typo.stdout
    assert typo.stderr.splitlines()[0] == "error: no such command 'gret' (did you mean 'greet'?)"
    elsewhere = machine_cmd("greet", "hi", cwd=tmp_path)  # no workspace with greet here
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.startswith("error: no such command 'greet' (did you mean 'agree'?)")
    assert ws.count() == 0


def test_the_help_says_how_the_shorthand_works(machine_cmd: Command) -> None:
    shown = machine_cmd("--help")
    assert shown.returncode == 0
    said = " ".join(shown.stdout.split())
    assert "`machine NAME [INPUT] [OPTIONS]`, where NAME is a machine and no command, is short for" in said
    assert "`machine run NAME [INPUT] [OPTIONS]`" in said
