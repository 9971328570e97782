"""A cases file that cannot be read reaches the agent as a tool error that names the file and says what to
do, not an opaque failure: nested too deep for the parser, or not UTF-8. The server lives on."""

from __future__ import annotations

from typing import Any

import anyio
from helpers.server_workspace import Folder, make_server
from mcp import Client

LIMIT = 60


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_unreadable_cases_are_a_clear_tool_error(folder: Folder) -> None:
    red = folder.root / "machines" / "red"
    (red / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (red / "latin1.json").write_bytes('[{"id": "a", "input": "café"}]'.encode("latin-1"))
    server, _ = make_server(folder, allowance=5)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            deep = await client.call_tool("rehearse", {"name": "red", "budget_usd": 1, "cases": "deep.json"})
            latin = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "latin1.json"}
            )
            shown = await client.call_tool("show_machine", {"name": "red"})
    assert deep.is_error
    assert "deep.json" in text(deep) and "more than 64 levels deep" in text(deep) and "flatten" in text(deep)
    assert latin.is_error
    assert "latin1.json" in text(latin) and "not UTF-8" in text(latin) and "save it as UTF-8" in text(latin)
    assert not shown.is_error  # listing the machine's cases files skips what is not one
    assert "deep.json" not in shown.structured_content["cases_files"]
    assert not folder.spending_log.exists()  # refused before anyone was asked or anything spent
