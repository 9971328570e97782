"""The plan a learning command prints before it starts (kept apart from the shared options, so commands
that learn nothing never import the learning layer)."""

from __future__ import annotations

from typing import Any

import click

from machine.learn import Options
from machine.ops import plan_learning
from machine.runs import inert
from machine.workspace import Workspace


def print_plan(
    ws: Workspace, operation: str, name: str, options: Options | None = None, **fields: Any
) -> None:
    """A learning command says what it will do at most before it starts (on stderr, as the spend), and
    each warning on a line of its own: a gate that cannot pass is said before anything is spent."""
    plan = plan_learning(ws, operation, name, options, **fields)
    click.echo(f"plan: {plan.describe(warnings=False)}", err=True)
    for warning in plan.warnings:
        click.secho(inert(f"warning: {warning}"), fg="yellow", err=True)
