"""The lists the pages give name everything there is: every harness in ``--harness``'s row, every tool the
MCP server lists in the tool tables, every example machine in the README's table. And an ``output``
sample is checked line by line against what its command printed (``helpers.doc_blocks``)."""

from __future__ import annotations

import re

import anyio
from helpers.doc_blocks import REPO, Block, output_missing

from machine.clients import HARNESSES
from machine.server.app import build_server

NAMED = re.compile(r"`([\w/]+)")


def _row(page: str, starts: str) -> str:
    [row] = [line for line in (REPO / page).read_text().splitlines() if line.startswith(starts)]
    return row


def _table_after(page: str, heading: str) -> list[str]:
    """The rows of the first table after ``heading``: its lines that start with ``|``."""
    text = (REPO / page).read_text().split(heading, 1)[1]
    lines = text.split("\n|", 1)[1].split("\n\n", 1)[0]
    return ["|" + line if not line.startswith("|") else line for line in lines.splitlines()]


def _first_cells(rows: list[str]) -> set[str]:
    return {name for row in rows for name in NAMED.findall(row.split("|")[1])}


def test_the_harness_option_names_every_harness() -> None:
    row = _row("docs/cli.md", "| `--harness NAME` |")
    assert set(HARNESSES) <= set(NAMED.findall(row.split("|")[2])), row


def test_every_tool_the_server_lists_is_in_the_tool_tables_and_the_hosts_list() -> None:
    tools = {tool.name for tool in anyio.run(build_server(None).list_tools)}
    assert {"ask_machine", "trust_machine", "rehearse"} <= tools
    serve = _first_cells(_table_after("docs/cli.md", "## machine serve"))
    returns = _first_cells(_table_after("docs/hosts.md", "## What the tools return"))
    intro = (REPO / "docs/hosts.md").read_text().split("The tools are ", 1)[1].split("\n\n", 1)[0]
    assert tools - serve == set(), "docs/cli.md's machine serve table"
    assert tools - returns == set(), "docs/hosts.md's What the tools return"
    assert tools - set(NAMED.findall(intro)) == set(), "docs/hosts.md's list of tools"


def test_the_readme_table_names_every_example_machine() -> None:
    machines = {
        str(path.parent.relative_to(REPO / "machines")) for path in (REPO / "machines").rglob("machine.py")
    }
    listed = _first_cells(_table_after("README.md", "## The example machines"))
    assert machines - listed == set(), machines - listed


def _sample(text: str) -> Block:
    return Block("page.md", 1, "", text, "output")


def test_an_output_sample_must_come_out_in_order_with_ids_and_elisions_free() -> None:
    printed = (
        "comparing dates: A = HEAD (d5a57fe48e2c), B = the working tree\n"
        "[run 20261206-092647-f36df0e94771a2a0 · m via echo · $0.0000]\n"
        "  score 1.00 → PASS on 2 of 6 weight\n"
        "spent $0.0000 of budget $1.00\n"
    )
    shown = (
        "comparing dates: A = HEAD (...), B = the working tree\n...\n"
        "[run 20261130-093857-f0fb790c · m via echo · $0.0000]\n"
    )
    assert output_missing(_sample(shown), printed) == []
    assert output_missing(_sample("  score 1.00 → PASS (pass score 1)\n"), printed) == [
        "  score 1.00 → PASS (pass score 1)"
    ]  # a figure that does not come out is named
    out_of_order = "spent $0.0000 of budget $1.00\n  score 1.00 → PASS on 2 of 6 weight\n"
    assert output_missing(_sample(out_of_order), printed) == ["  score 1.00 → PASS on 2 of 6 weight"]
