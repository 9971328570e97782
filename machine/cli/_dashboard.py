"""``machine dashboard``: the live web view of this workspace, on loopback unless told otherwise. The web
stack (starlette, uvicorn) is imported only when the command runs."""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

import click

from machine.errors import BadInputError

from ._options import handle_errors, with_workspace, workspace_from


def _dashboard() -> Any:
    """``machine.dashboard``, imported only now; a missing web stack is said with the install to run."""
    try:
        return importlib.import_module("machine.dashboard")
    except ImportError as error:
        raise BadInputError(
            f"the dashboard needs starlette and uvicorn ({error}): pip install 'machine[dashboard]'"
        ) from None


@click.command("dashboard")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=4242, show_default=True, help="The port (0: a free one)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; off loopback every request needs the bearer token "
    "(MACHINE_DASHBOARD_TOKEN, else one printed once at start).",
)
@with_workspace
@click.pass_context
@handle_errors
def dashboard_command(ctx: click.Context, /, port: int, host: str) -> None:
    """Watch this workspace's machines in a browser: runs as they happen, each run's scorecard and
    steps, quality and spend over time, two versions or suites case by case, training records with
    their loss, and the spending log. It follows .machine/ (the store and events.jsonl), so whatever
    runs machines elsewhere shows up here. Stop it with Ctrl-C.
    """
    import anyio

    ws = workspace_from(ctx)
    module = _dashboard()

    def say(text: str) -> None:
        click.echo(text, err=True)

    def ready(url: str) -> None:
        say(f"machine dashboard: {url} (Ctrl-C stops it)")

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(lambda: module.serve_dashboard(ws, host=host, port=port, say=say, on_ready=ready))
