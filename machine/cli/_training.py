"""``machine training list [NAME]`` and ``machine training show ID``: the workspace's training records,
with what became of each, and one record whole (its plan, gate, and loss per step, as a chart and as
numbers, and per epoch)."""

from __future__ import annotations

import click

from machine.learn import training_rows, training_shown
from machine.runs import inert

from ._complete import machine_argument
from ._options import handle_errors, with_workspace, workspace_from
from ._render import dump_json


@click.group("training")
def training_group() -> None:
    """List and show training records (.machine/training/)."""


@training_group.command("list")
@machine_argument(required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the records as a JSON list.")
@with_workspace
@click.pass_context
@handle_errors
def training_list(ctx: click.Context, /, name: str | None, as_json: bool) -> None:
    """List the training records (of machine NAME), newest first, with what became of each.

    \b
    Examples:
      machine training list
      machine training list signoff --json
    """
    rows = training_rows(workspace_from(ctx), name)
    if as_json:
        dump_json(rows)
        return
    if not rows:
        click.echo("no training records" + (f" of machine {name!r}" if name else ""))
        return
    for r in rows:
        planned = f"/{r.planned_steps}" if r.planned_steps is not None else ""
        click.echo(
            inert(
                f"{r.id}  {r.machine}  {r.trainer} on {r.base_model}  {r.steps}{planned} steps  {r.outcome}"
            )
        )


@training_group.command("show")
@click.argument("record_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the record, its steps and outcome as JSON.")
@with_workspace
@click.pass_context
@handle_errors
def training_show(ctx: click.Context, /, record_id: str, as_json: bool) -> None:
    """Show training record ID: its plan, gate, outcome, and loss per step and per epoch.

    \b
    Examples:
      machine training show 20261202-180430-2d4f3e6f805cc685
    """
    shown = training_shown(workspace_from(ctx), record_id)
    if as_json:
        dump_json(shown)
    else:
        click.echo(inert("\n".join(shown.lines())))  # a record is a file: read it as text
