"""``machine machinist``: the terminal chat with the machinist, the built-in machine that looks at the
workspace's machines and improves them, spending and changing only what the person agrees to."""

from __future__ import annotations

from typing import Any

import click

from ._chat import chat
from ._options import handle_errors, spending_options, with_workspace, workspace_from


@click.command("machinist")
@click.option("--continue", "resume", is_flag=True, help="Resume the last conversation with the machinist.")
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def machinist_command(ctx: click.Context, /, resume: bool, **spending: Any) -> None:
    """Talk to the machinist about this workspace's machines.

    It reads them and their runs freely; it rehearses, optimizes, trains or specializes a machine (each
    spends) and commits or reverts a version only after you agreed in your latest message: you named a
    budget ("go ahead, up to $2") or said yes to the cost it stated. --harness and --model choose the
    machinist's own model; each tool call picks the harness of the machine it acts on.

    \b
    Examples:
      machine machinist
      machine machinist --model local:smollm2-135m
    """
    ws = workspace_from(ctx, **spending)
    spec = ws.load("machinist")
    chat(ws, spec, grade=False, resume=resume, pass_score=1.0, model=spending["model"])
