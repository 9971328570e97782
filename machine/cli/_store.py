"""``machine store copy --from A --to B``: a workspace's runs, suites and chat sessions moved from one
store to another (a SQLite file, a PostgreSQL URL)."""

from __future__ import annotations

import click

from machine.ops import copy_store
from machine.runs import counted

from ._options import handle_errors
from ._render import dump_json


@click.group("store")
def store_group() -> None:
    """Copy a workspace's history between stores."""


@store_group.command("copy")
@click.option("--from", "source", required=True, metavar="URL|FILE", help="The store to copy from.")
@click.option("--to", "target", required=True, metavar="URL|FILE", help="The store to copy into.")
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as JSON.")
@handle_errors
def store_copy(source: str, target: str, as_json: bool) -> None:
    """Copy every run, suite and chat session of one store into another: a SQLite file (a workspace's
    .machine/store.db) or a PostgreSQL URL (postgresql://user:password@host:port/database, or libpq's
    'host=... dbname=...' settings; a password is never printed). Runs are written as upserts in
    batches, so a copy stopped part way is finished by running it again, and a second copy changes
    nothing. The source is only read."""

    def progress(runs: int) -> None:
        if not as_json:
            click.echo(f"  {counted(runs, 'run')} copied", err=True)

    copied = copy_store(source, target, on_runs=progress)
    if as_json:
        dump_json(copied)
        return
    click.echo(
        f"copied {counted(copied.runs, 'run')}, {counted(copied.suites, 'suite')}, "
        f"{counted(copied.sessions, 'chat session')} and {counted(copied.spending, 'spending-log line')} "
        f"from {copied.source} to {copied.target}"
    )
