"""Aligned columns through rich's table: laid out by rich, printed as plain lines (the header bold on a
terminal), never wrapped or cut, with no trailing spaces, so a pipe, ``grep`` and ``cut`` get whole rows.
rich is imported only when a table is printed. A cell may hold a run's text: it is made inert, and rich
reads no markup in it (``[bold]`` stays as typed)."""

from __future__ import annotations

import io
from collections.abc import Collection, Sequence

import click

from ._inert import inert

Rows = Sequence[Sequence[str]]


def table_lines(headers: Sequence[str], rows: Rows, *, right: Collection[int] = ()) -> list[str]:
    """The header line and one line a row; the columns ``right`` (by index) aligned to the right."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0), show_header=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*map(inert, row))
    out = io.StringIO()
    console = Console(file=out, width=100_000, color_system=None, highlight=False, markup=False, emoji=False)
    console.print(table)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def print_table(headers: Sequence[str], rows: Rows, *, right: Collection[int] = ()) -> None:
    lines = table_lines(headers, rows, right=right)
    click.secho(lines[0], bold=True)
    for line in lines[1:]:
        click.echo(line)
