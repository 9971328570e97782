"""``--workspace`` and ``--store``, the options the command group itself takes (and every command): kept
apart from the commands' options so that ``machine --help`` loads no more than click to show it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _remember_workspace(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--workspace`` may stand before the command or after its arguments; the later one wins."""
    if value is not None:
        ctx.ensure_object(dict)
        root = ctx.find_root()
        root.ensure_object(dict)
        root.obj["workspace"] = value
    return value


workspace_option = click.option(
    "--workspace",
    metavar="DIR",
    default=None,
    expose_value=False,
    callback=_remember_workspace,
    is_eager=True,
    help="The workspace folder (default: $MACHINE_WORKSPACE, else the current directory).",
)


def _remember_store(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--store`` is ``MACHINE_STORE`` for this command (and the processes it starts)."""
    if value is not None:
        os.environ["MACHINE_STORE"] = value  # machine.runs.STORE_ENV, named here so parsing loads no store
    return value


store_option = click.option(
    "--store",
    metavar="URL|FILE",
    default=None,
    expose_value=False,
    callback=_remember_store,
    is_eager=True,
    help="Where runs are stored: a postgresql:// URL (or libpq's 'host=... dbname=...' settings) or a "
    "SQLite file (default: $MACHINE_STORE, else the workspace's .machine/store.db).",
)


def with_workspace(fn: F) -> F:
    return workspace_option(store_option(fn))
