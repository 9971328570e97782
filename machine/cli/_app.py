"""The ``machine`` command group. Commands are thin: parse, call the library, render."""

from __future__ import annotations

from typing import Any

import click

from ._agree import agree_command
from ._compare import compare_command
from ._converse import converse_command
from ._export import export_command
from ._learn import optimize_command
from ._machines import list_machines_command, show, tree
from ._options import workspace_option
from ._runs import eval_run, run, runs
from ._serve import serve_command
from ._specialize import draft_rubric_command, specialize_command
from ._stop import INTERRUPTED, end, stop_status
from ._suite import suite
from ._train import train_command
from ._trust import trust_command
from ._versions import commit_command, propose_command, revert_command, versions_command


class _Commands(click.Group):
    """The command group, which ends every command stopped from outside (Ctrl-C, a closed pipe) quietly:
    a short line and the conventional exit status instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BaseException as error:
            status = stop_status(error)
            if status is None:
                raise
            end(status, ["interrupted"] if status == INTERRUPTED else [])


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@workspace_option
def cli() -> None:
    """Small agent loops with a rubric: run machines, grade their runs, measure them."""


COMMANDS = (
    list_machines_command,
    show,
    tree,
    run,
    runs,
    eval_run,
    suite,
    converse_command,
    compare_command,
    agree_command,
    versions_command,
    propose_command,
    optimize_command,
    train_command,
    specialize_command,
    draft_rubric_command,
    trust_command,
    commit_command,
    revert_command,
    export_command,
    serve_command,
)
for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    """The console script."""
    cli(prog_name="machine")
