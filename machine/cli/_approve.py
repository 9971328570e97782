"""Who approves a session's spending and changing tool calls at the command line: the person, asked by the
program at their terminal, and the allowance they typed (``--allow USD``).

The question is the program's own, drawn from the call's arguments and plan; it is shown inert (no escape
sequence a model wrote can hide part of it), any answer typed ahead is thrown away first, and only a yes
typed to it counts: ``y`` or ``yes`` allows the amount shown, ``y 2`` (or ``yes, up to $2``) caps the call
at a smaller amount, and anything else is a no. Without a terminal (piped input, ``-p``) nobody is asked:
only the allowance can approve.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from machine.runs import Answer, Approver, Question, inert

from ._progress import paused

F = TypeVar("F", bound=Callable[..., Any])

YES = re.compile(
    r"^\s*y(?:es)?\b(?:\s*,?\s*(?:up to|at most|max(?:imum)?|but)?\s*\$?\s*(\d+(?:\.\d+)?)\s*"
    r"(?:usd|dollars?|\$)?)?\s*[.!]?\s*$",
    re.IGNORECASE,
)
"""A yes, with an optional smaller amount in USD: ``y``, ``yes``, ``y 2``, ``yes, up to $2``."""

allow_option = click.option(
    "--allow",
    "allow",
    type=click.FloatRange(min=0),
    default=None,
    metavar="USD",
    help="Let the machine's tools spend up to this much in all this session without asking each time "
    "(a running total; a forced commit is always asked). Without a terminal, only this lets them spend.",
)


def parse_answer(typed: str) -> Answer:
    """What the person's answer says: a yes (with a smaller amount, maybe), else a no."""
    found = YES.match(typed)
    if found is None:
        return Answer(yes=False, said=typed.strip())
    amount = found.group(1)
    return Answer(yes=True, said=typed.strip(), usd=float(amount) if amount is not None else None)


def at_terminal() -> bool:
    """Whether a person is at a terminal to be asked: the input the answer is read from, and the stderr
    the question is shown on, are both one."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def approver(allow: float | None, *, command: str, ask: bool, within: str | None = None) -> Approver:
    """The session's approver: the allowance typed as ``command --allow USD`` (if any), and the person
    at the terminal when ``ask`` and there is one."""
    source = f"{command} --allow {allow:g}" if allow is not None else "an allowance"
    return Approver(
        allowance_usd=allow,
        ask=ask_at_terminal if ask and at_terminal() else None,
        allowance_source=source,
        within=within,
    )


async def ask_at_terminal(question: Question) -> Answer:
    """Ask the person the program's ``question`` and read their answer from the terminal (the spinner
    paused meanwhile). Ctrl-C stops the turn; the end of input is a no."""
    with paused():
        discard_typed_ahead()
        click.echo("", err=True)
        click.secho("The program asks you (not the model):", bold=True, err=True)
        click.echo(f"  {inert(question.text)}", err=True)
        if question.force:
            prompt = "Do it anyway, over that refusal? [y/N] "
        elif question.most_usd is not None:
            prompt = f"Go ahead, spending at most {_usd(question.most_usd)}? [y/N, or y USD for less] "
        else:
            prompt = "Go ahead? [y/N] "
        click.secho(prompt, bold=True, nl=False, err=True)
        try:
            typed = await read_line()
        except BaseException:  # Ctrl-C: what comes next starts on a line of its own
            click.echo("", err=True)
            raise
    answer = parse_answer(typed)
    if question.force and answer.usd is not None:
        return Answer(yes=False, said=answer.said)  # a forced change is a plain yes, never an amount
    return answer


def _usd(value: float) -> str:
    """Cents as cents ($0.50), a smaller amount as the question shows it ($0.1096)."""
    return f"${value:.2f}" if value == round(value, 2) else f"${value:.4g}"


async def read_line() -> str:
    """The line the person types next (empty at the end of input), read without holding up the event
    loop: Ctrl-C meanwhile cancels the turn as it does while the model thinks, and leaves no reader
    behind to take the next line typed."""
    import anyio

    fd = sys.stdin.fileno()
    await anyio.wait_readable(fd)
    return os.read(fd, 4096).decode("utf-8", "replace").strip()


def discard_typed_ahead() -> None:
    """Throw away what was typed before the question was shown: only an answer typed to it counts."""
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass  # not a terminal: nothing typed ahead to discard
