"""Changes to the person's own files, asked about at their terminal (``--edits ask``): each change is shown
as it is, a unified diff with the path relative to the project (a new file whole, a deletion named) or
the command line, made inert (no escape sequence in a proposed file can hide or recolour a line), and
only ``y`` applies it; ``a`` applies the rest of this turn's changes unasked, ``q`` stops the run, and
anything else (Enter, the end of input) is a no the model is told of.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from machine.errors import BadInputError
from machine.runs import EDIT_MODES, EditAnswer, EditMode, EditProposal, inert
from machine.spec import Machine
from machine.workspace import Workspace

from ._approve import at_terminal, discard_typed_ahead, read_line
from ._progress import paused

SHOWN_LINES = 2_000
"""The most lines of a diff shown; the rest are counted (the run keeps the change it made)."""
CHOICES = {"y": "yes", "yes": "yes", "a": "all", "all": "all", "q": "quit", "quit": "quit"}

edits_option = click.option(
    "--edits",
    type=click.Choice(EDIT_MODES),
    default=None,
    help="How the machine's tools change the files of the project you run it in: ask shows each change "
    "(a diff, or the command) and makes it only after your yes (the default at a terminal), auto makes "
    "them unasked, deny refuses them (the default without a terminal).",
)


def _coloured(line: str) -> str:
    shown = inert(line)
    if line.startswith(("+++", "---", "@@")):
        return click.style(shown, bold=True)
    if line.startswith("+"):
        return click.style(shown, fg="green")
    if line.startswith("-"):
        return click.style(shown, fg="red")
    return shown


def show_change(proposal: EditProposal) -> None:
    """The change as the person is asked about it: what the tool would do, then the diff or command."""
    where = " in your project" if proposal.command is not None else ""
    click.secho(f"The machine wants to {proposal.action}{where}:", bold=True, err=True)
    lines = proposal.diff.splitlines()
    for line in lines[:SHOWN_LINES]:
        click.echo("  " + _coloured(line), err=True)
    if len(lines) > SHOWN_LINES:
        click.secho(f"  … {len(lines) - SHOWN_LINES:,} more lines not shown", dim=True, err=True)


async def ask_edit_at_terminal(proposal: EditProposal) -> EditAnswer:
    """Show ``proposal`` and read the person's answer (the spinner paused meanwhile). Ctrl-C stops the
    turn, and nothing more is written."""
    with paused():
        discard_typed_ahead()
        click.echo("", err=True)
        show_change(proposal)
        click.secho("Apply it? [y]es / [N]o / [a]ll this turn / [q]uit ", bold=True, nl=False, err=True)
        try:
            typed = await read_line()
        except BaseException:  # Ctrl-C: what comes next starts on a line of its own
            click.echo("", err=True)
            raise
    choice: Any = CHOICES.get(typed.strip().lower(), "no")
    return EditAnswer(choice=choice, by="terminal")


def set_edits(ws: Workspace, mode: EditMode | None) -> EditMode:
    """How this command's runs change the project's files, and who is asked: ``ask`` at a terminal,
    ``deny`` without one (nobody could answer); ``ask`` without a terminal is refused in words."""
    terminal = at_terminal()
    chosen: EditMode = mode or ("ask" if terminal else "deny")
    if chosen == "ask" and not terminal:
        raise BadInputError(
            "--edits ask needs a terminal to ask you at, and this one has none: use --edits auto to let the "
            "machine change your files unasked, or --edits deny"
        )
    ws.edits = chosen
    ws.approve_edit = ask_edit_at_terminal if chosen == "ask" else None
    return chosen


SAID = {
    "ask": "each change they would make is shown to you first, and made only after your yes",
    "auto": "what they write stays (--edits auto)",
    "deny": "every change is refused (--edits deny)",
}


def in_project(ws: Workspace, spec: Machine, edits: EditMode | None) -> None:
    """A run started outside the workspace works on the files of the folder it was started in (a
    project, never the whole home folder or the root), changed as ``edits`` says; said once, before
    anything runs (a refused run says only why)."""
    here = Path.cwd().resolve()
    if here != ws.root and spec.tools:
        if here in (Path.home().resolve(), Path(here.anchor)):
            raise BadInputError(
                f"machine run works on the files of the folder it is started in, and {here} is your whole "
                "home folder (or the root): cd into a project folder first, or into the workspace for a "
                "fresh sandbox per run"
            )
        ws.project = here
    if ws.project is not None:
        ws.budget.check()
        said = SAID[set_edits(ws, edits)]
        click.echo(
            f"{spec.name}'s tools work on the real files of {ws.project}, not on a copy: {said}", err=True
        )


__all__ = ["ask_edit_at_terminal", "edits_option", "in_project", "set_edits", "show_change"]
