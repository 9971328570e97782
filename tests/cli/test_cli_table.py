"""Aligned columns: laid out by width in terminal cells, the text of each cell printed as it is, rows never
cut; the same lines rich's ``Table`` printed before (kept here as the oracle), at a fraction of its cost."""

from __future__ import annotations

import io
import random
from collections.abc import Collection, Sequence

import pytest

from machine.cli._table import table_lines
from machine.runs import inert


def rich_lines(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = ()
) -> list[str]:
    """The lines of the rich table ``table_lines`` replaced, as it built them."""
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


def test_cells_are_printed_as_they_are_and_columns_align() -> None:
    lines = table_lines(["name", "n"], [["[bold]x[/bold]", "7"], [":smile:", "1234"]], right=[1])
    assert lines == ["name" + " " * 15 + "n", "[bold]x[/bold]" + " " * 5 + "7", ":smile:" + " " * 9 + "1234"]


def test_a_long_row_is_neither_wrapped_nor_cut() -> None:
    long = "word " * 400
    lines = table_lines(["a", "b"], [["1", long]])
    assert len(lines) == 2
    assert lines[1] == "1  " + long.rstrip()
    assert all(line == line.rstrip() for line in lines)


def test_wide_characters_take_two_cells_and_zero_width_ones_none() -> None:
    lines = table_lines(["word", "n"], [["日本語", "1"], ["e\u0301", "22"], ["🙂x", "3"]], right=[1])
    assert lines == ["word     n", "日本語   1", "e\u0301       22", "🙂x      3"]


def test_right_aligned_columns_pad_on_the_left_and_drop_a_cells_trailing_spaces() -> None:
    lines = table_lines(
        ["id", "score", "cost"], [["a", "1.00 ", "$0.1"], ["bb", "0.5", "$12.25"]], right=[1, 2]
    )
    assert lines == ["id  score    cost", "a    1.00    $0.1", "bb    0.5  $12.25"]


def test_an_empty_column_and_a_last_column_leave_no_trailing_spaces() -> None:
    lines = table_lines(["id", "", "note"], [["r1", "", ""], ["r2", "pass", "fine"]])
    assert lines == ["id        note", "r1", "r2  pass  fine"]


def test_a_cell_of_several_lines_makes_its_row_as_tall() -> None:
    lines = table_lines(["id", "why"], [["r1", "error: boom\nat line 3"], ["r2", "-"]])
    assert lines == ["id  why", "r1  error: boom", "    at line 3", "r2  -"]


def test_a_tab_moves_to_the_next_stop_and_is_never_cut() -> None:
    lines = table_lines(["a", "b"], [["x\ty", "1"], ["日\tz", "2"]])
    assert lines == ["a          b", "x       y  1", "日      z  2"]


SAMPLES: list[tuple[list[str], list[list[str]], list[int]]] = [
    (
        ["case", "mean", "pass^N", "notes"],
        [["sea", "0.00", "0/1", "1 unscored grade"], ["three", "1.00", "0/1", ""]],
        [],
    ),
    (
        ["threshold", "agree", "kappa", "kept bad @10%"],
        [["0.50", "90%", "0.812", "3%"], ["0.75", "100%", "1", ""]],
        [0, 1, 2, 3],
    ),
    (
        ["id", "started", "score", "", "cost", "input, or why it failed"],
        [
            ["r1", "12:00", "0.50", "fail", "$0.0010", "'hi'"],
            ["r2", "12:01", "ERROR", "", "$0.0000", "error: no rule\nmatched"],
        ],
        [],
    ),
    (
        ["id", "note"],
        [
            ["r1", "[bold]loud[/bold] [red"],
            ["r2", "fine\x1b]0;title\x07\x1b[8mconcealed"],
            ["r3", "\u202eevil"],
        ],
        [],
    ),
    (["who", "said"], [["日本", "ünïcödé ✓"], ["ﷺ", "a\u200db"], ["👨\u200d👩\u200d👧", " lead"]], [1]),
    (["a", "b", "c"], [["x\n", "", "y "], ["", "\n\nz", " "]], [2]),
    ([], [], []),
    (["only"], [], []),
]


@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_the_lines_are_the_ones_rich_printed(sample: int) -> None:
    headers, rows, right = SAMPLES[sample]
    assert table_lines(headers, rows, right=right) == rich_lines(headers, rows, right)


def test_random_tables_print_as_rich_printed_them() -> None:
    """Cells of ASCII, wide, combining and zero-width characters, spaces, newlines and controls (no tab:
    rich cut a tab's cell short), in columns aligned either way."""
    pieces = [
        "a",
        "b",
        " ",
        "x1",
        "日",
        "語",
        "🙂",
        "é",
        "e\u0301",
        "\n",
        "[",
        "]",
        "\x1b",
        "ﷺ",
        "\u200b",
        "Ω",
        "\r\n",
    ]
    rng = random.Random(7)
    for _ in range(150):
        columns = rng.randint(1, 5)
        headers = ["".join(rng.choices("abcdef ", k=rng.randint(0, 6))) for _ in range(columns)]
        rows = [
            ["".join(rng.choices(pieces, k=rng.randint(1, 7))) for _ in range(columns)]
            for _ in range(rng.randint(0, 5))
        ]
        right = [i for i in range(columns) if rng.random() < 0.4]
        assert table_lines(headers, rows, right=right) == rich_lines(headers, rows, right), (
            headers,
            rows,
            right,
        )
