"""Aligned columns: rich lays them out, the text of each cell is printed as it is, rows are never cut."""

from __future__ import annotations

from machine.cli._table import table_lines


def test_cells_are_printed_as_they_are_and_columns_align() -> None:
    lines = table_lines(["name", "n"], [["[bold]x[/bold]", "7"], [":smile:", "1234"]], right=[1])
    assert lines == ["name" + " " * 15 + "n", "[bold]x[/bold]" + " " * 5 + "7", ":smile:" + " " * 9 + "1234"]


def test_a_long_row_is_neither_wrapped_nor_cut() -> None:
    long = "word " * 400
    lines = table_lines(["a", "b"], [["1", long]])
    assert len(lines) == 2
    assert lines[1] == "1  " + long.rstrip()
    assert all(line == line.rstrip() for line in lines)
