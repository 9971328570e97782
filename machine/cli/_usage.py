"""Click's own errors (an unknown option or command, a missing argument, a value of the wrong type) said
the way the commands' errors are: one ``error:`` line, then the usage and where the help is, exit status 2."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Any

import click


class UsageRefused(click.ClickException):
    """A click error, shown as ``error: ...`` instead of click's ``Usage:``/``Error:`` block."""

    def __init__(self, error: click.ClickException) -> None:
        super().__init__(_sentence(error.format_message()))
        self.ctx: click.Context | None = getattr(error, "ctx", None)

    exit_code = click.UsageError.exit_code

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.message}", file=file, err=True)
        if self.ctx is not None:
            usage = self.ctx.get_usage().removeprefix("Usage: ")
            click.echo(f"usage: {usage}  (`{self.ctx.command_path} --help` says more)", file=file, err=True)


_SUGGESTION = re.compile(r"\.? \(?Did you mean (?:one of: )?(.+?)\??\)?$")


def _sentence(message: str) -> str:
    """Click's "No such option '--x'. (Did you mean '--y'?)" as ours read: lower-case first word, the
    suggestion in brackets, no full stop."""
    message = _SUGGESTION.sub(r" (did you mean \1?)", message.strip()).removesuffix(".")
    if len(message) > 1 and message[0].isupper() and message[1].islower():
        message = message[0].lower() + message[1:]
    return message


def unknown_command(name: str, known: Iterable[str]) -> str:
    """The refusal of command ``name``, with the nearest known command when one is close."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no such command {name!r}{hint}"
