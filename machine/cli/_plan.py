"""The plan a learning command prints before it starts (kept apart from the shared options, so commands
that learn nothing never import the learning layer)."""

from __future__ import annotations

import click

from machine.learn import Options
from machine.ops import plan_learning
from machine.workspace import Workspace


def print_plan(ws: Workspace, operation: str, name: str, options: Options) -> None:
    """A learning command says what it will do at most before it starts (on stderr, as the spend)."""
    click.echo(f"plan: {plan_learning(ws, operation, name, options).describe()}", err=True)
