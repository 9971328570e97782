"""``machine machinist``: the terminal chat with the machinist, the built-in machine that looks at the
workspace's machines and improves them. Before each call that spends or changes, the program asks the
person its own question (or draws on the allowance they typed); the machinist's words never count."""

from __future__ import annotations

from typing import Any

import click

from ._approve import allow_option, approver
from ._chat import chat, send_once
from ._options import handle_errors, spend_id, spending_options, with_workspace, workspace_from


@click.command("machinist")
@click.option("--continue", "resume", is_flag=True, help="Resume the last conversation with the machinist.")
@click.option(
    "-p",
    "--print",
    "message",
    default=None,
    metavar="MESSAGE",
    help="Send MESSAGE, print the reply and exit (nobody is asked: only --allow lets tools spend).",
)
@allow_option
@spending_options
@with_workspace
@click.pass_context
@handle_errors
def machinist_command(
    ctx: click.Context, /, resume: bool, message: str | None, allow: float | None, **spending: Any
) -> None:
    """Talk to the machinist about this workspace's machines.

    It reads them and their runs freely. Before it rehearses, optimizes, trains or specializes a machine
    (each spends) or commits or reverts a version, the program asks you itself, showing what the call
    will do and the most it may spend: answer y, or y USD to cap it lower; anything else is a no. --allow
    USD lets the calls spend up to that much in all without asking. --budget caps everything the session
    spends, the machinist's own model calls and its tools'. --harness and --model choose the machinist's
    own model; each tool call picks the harness of the machine it acts on.

    \b
    Examples:
      machine machinist
      machine machinist --allow 2 --budget 3
      machine machinist -p "how is red doing?"
    """
    ws = workspace_from(ctx, **spending)
    spec = ws.load("machinist")
    who = approver(allow, command="machine machinist", ask=message is None, within=spend_id(ctx))
    if message is not None:
        send_once(ws, spec, message, resume=resume, model=spending["model"], approver=who)
        return
    chat(ws, spec, grade=False, resume=resume, model=spending["model"], approver=who)
