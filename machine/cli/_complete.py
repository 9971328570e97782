"""Shell completion: the machine names and case ids a person would type next, read from the workspace's
folders and cases files, so a Tab never imports a machine, opens the store or spends anything.

Click does the shell side (``_MACHINE_COMPLETE=bash_source machine``); ``machine completion SHELL``
prints that script, and the arguments below say what to offer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import BashComplete, CompletionItem, FishComplete, ShellComplete, ZshComplete

from machine.errors import MachineError
from machine.spec import BUILTIN_MACHINES, discover, load_cases
from machine.workspace import Workspace, workspace_root

F = TypeVar("F", bound=Callable[..., Any])

SHELLS: dict[str, type[ShellComplete]] = {"bash": BashComplete, "zsh": ZshComplete, "fish": FishComplete}


def _root(ctx: click.Context) -> Path:
    """The workspace a completed command would use: ``--workspace``, else ``MACHINE_WORKSPACE``, else here."""
    return workspace_root((ctx.find_root().obj or {}).get("workspace"))


def machine_names(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The workspace's machines, then the library's own, that start with what is typed."""
    names = discover(_root(ctx) / "machines")
    names += [n for n in discover(BUILTIN_MACHINES) if n not in names]
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def case_ids(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The ids in the machine's cases file (``--cases``, else its ``cases.json``); none when the file is
    missing or broken, which the command itself reports when it runs."""
    name = ctx.params.get("name")
    if not isinstance(name, str):
        return []
    path = Workspace(_root(ctx)).cases_file(name, ctx.params.get("cases_file"))
    try:
        cases = load_cases(path)
    except (MachineError, OSError):
        return []
    return [CompletionItem(c.id) for c in cases if c.id.startswith(incomplete)]


def machine_argument(name: str = "name", **kwargs: Any) -> Callable[[F], F]:
    """A machine-name argument that completes from the workspace."""
    return click.argument(name, shell_complete=machine_names, **kwargs)


@click.command("completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(list(SHELLS)))
def completion_command(shell: str) -> None:
    """Print the script that completes commands and names in SHELL.

    Commands and options complete as they are; a machine's name from the workspace's machines/ folder;
    a conversation's case from the machine's cases file. Load it from the shell's start-up file: in
    ~/.bashrc, eval "$(machine completion bash)"; in ~/.zshrc, the same with zsh; for fish, write it to
    ~/.config/fish/completions/machine.fish once."""
    root = click.get_current_context().find_root().command
    click.echo(SHELLS[shell](root, {}, "machine", "_MACHINE_COMPLETE").source())
