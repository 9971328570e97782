"""Aligned columns: each as wide as its widest cell in terminal cells, two spaces apart, printed as plain
lines (the header bold on a terminal), never wrapped or cut, with no trailing spaces, so a pipe, ``grep``
and ``cut`` get whole rows. Laid out here in one pass, in time linear in the cells: rich's ``Table`` cost
about a millisecond a row, more than the suite run it reported. The lines are the ones that table
printed (no box, no wrap), except that a tab is measured where it ends, not cut. A cell may hold a run's
text: it is made inert and printed as it is, read as no markup (``[bold]`` stays as typed)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import click

from machine.runs import inert

Rows = Sequence[Sequence[str]]

_GAP = "  "
_TAB = 8


def table_lines(headers: Sequence[str], rows: Rows, *, right: Collection[int] = ()) -> list[str]:
    """The header line and one line a row (a cell of several lines makes its row as tall); the columns
    ``right`` (by index) aligned to the right. Each row has a cell for each header."""
    table = [list(headers), *map(_inert_row, rows)]
    widths = [max(map(_width, column)) for column in zip(*table, strict=True)]
    at_right = {i for i in range(len(widths)) if i in right}
    line = _GAP.join(f"{{:{'>' if i in at_right else '<'}{w}}}" for i, w in enumerate(widths)).format
    lines: list[str] = []
    for row in table:
        joined = "".join(row)
        if not (joined.isascii() and joined.isprintable()):  # a tab, a newline, a character not one cell
            lines += _measured(row, widths, at_right)
        elif at_right:  # a right-aligned cell's trailing spaces count in its width but are not printed
            lines.append(line(*(c.rstrip() if i in at_right else c for i, c in enumerate(row))).rstrip())
        else:
            lines.append(line(*row).rstrip())
    return lines


def print_table(headers: Sequence[str], rows: Rows, *, right: Collection[int] = ()) -> None:
    """The table on stdout, its header bold on a terminal; a row a line, so a reader that leaves (``| head``)
    stops the next write."""
    lines = table_lines(headers, rows, right=right)
    click.secho(lines[0], bold=True)
    for line in lines[1:]:
        click.echo(line)


def _inert_row(row: Sequence[str]) -> list[str]:
    """The row with each cell inert: one scan of the whole row when none holds a control (the usual)."""
    joined = "".join(row)
    return list(row) if inert(joined) is joined else [inert(cell) for cell in row]


def _width(cell: str) -> int:
    """How many terminal cells ``cell`` takes: its widest line."""
    if cell.isascii() and cell.isprintable():
        return len(cell)
    return max(map(_cells, _lines(cell)))


def _measured(row: Sequence[str], widths: Sequence[int], right: Collection[int]) -> list[str]:
    """A row with a cell of several lines, a tab or a character not one cell wide: padded by cell width,
    each cell's lines top-aligned, a shorter cell left blank below (a column of no width shows one line,
    as rich's did)."""
    cells = [_lines(cell)[: None if width else 1] for cell, width in zip(row, widths, strict=True)]
    out = []
    for at in range(max(map(len, cells))):
        parts = []
        for i, (lines, width) in enumerate(zip(cells, widths, strict=True)):
            text = lines[at] if at < len(lines) else ""
            if i in right:
                text = text.rstrip()
                parts.append(" " * (width - _cells(text)) + text)
            else:
                parts.append(text + " " * (width - _cells(text)))
        out.append(_GAP.join(parts).rstrip())
    return out


def _lines(cell: str) -> list[str]:
    """The lines of a cell, each tab turned into the spaces to the next stop of 8 cells (as rich did)."""
    lines = cell.split("\n")
    return [_untab(line) if "\t" in line else line for line in lines]


def _untab(line: str) -> str:
    parts = line.split("\t")
    text, at = "", 0
    for part in parts[:-1]:
        at += _cells(part)
        spaces = _TAB - at % _TAB
        text, at = text + part + " " * spaces, at + spaces
    return text + parts[-1]


def _cells(text: str) -> int:
    """The terminal width of one line with no tab or newline: ``len`` for ASCII; otherwise wide (East
    Asian) characters count two and zero-width ones none, measured as rich measures them."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # imported only for a cell that needs it

    return cell_len(text)
