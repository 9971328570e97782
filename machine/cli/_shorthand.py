"""``machine NAME``, the seed's shorthand for ``machine run NAME``: a first word that no command has and
that names a machine of the workspace (or of the library) opens it as ``run`` would, with everything
after it passed on. Asked only when the first word is no command, so ``machine --help`` and every
command load nothing for it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from machine.spec import BUILTIN_MACHINES, discover
from machine.workspace import workspace_root


def _workspace(ctx: click.Context, rest: Sequence[str]) -> str | None:
    """The workspace the command would use: a ``--workspace`` after the name (the last wins), else one
    given before it; None leaves it to ``MACHINE_WORKSPACE``, else the current directory."""
    chosen: str | None = (ctx.find_root().obj or {}).get("workspace")
    for i, word in enumerate(rest):
        if word == "--":
            break
        if word == "--workspace" and i + 1 < len(rest):
            chosen = rest[i + 1]
        elif word.startswith("--workspace="):
            chosen = word.removeprefix("--workspace=")
    return chosen


def machine_names(ctx: click.Context, rest: Sequence[str]) -> list[str]:
    """The machines ``machine NAME`` can open: the workspace's, then the library's own, by name."""
    names = discover(Path(workspace_root(_workspace(ctx, rest))) / "machines")
    return names + [n for n in discover(BUILTIN_MACHINES) if n not in names]
