"""Every string argument of every MCP tool is bounded: its schema says how long it may be, and a longer one
(a 100,000-character ``model`` for ``specialize``) is an ``isError`` result naming the argument, before the
person is asked, with nothing spent or written. Through the SDK's client, on a copy of red."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from helpers.server_workspace import Folder, make_server
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

LIMIT = 120
HUGE = 100_000
REQUIRED: dict[str, dict[str, Any]] = {
    "show_machine": {"name": "red"},
    "recent_runs": {"name": "red"},
    "rehearse": {"name": "red", "budget_usd": 1},
    "ask_machine": {"name": "red", "input": "Roses are red.", "budget_usd": 1},
    "commit": {"name": "red"},
    "revert": {"name": "red"},
    "specialize": {"parent": "red", "focus": "noting red", "budget_usd": 1},
    "optimize": {"name": "red", "budget_usd": 1},
    "train": {"name": "red", "budget_usd": 1},
    "plan_training": {"name": "red"},
    "smoke_training": {"name": "red", "budget_usd": 1},
}
"""A call each tool takes, to which one oversized argument is added."""


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def strings(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The free string schemas a property allows (itself, or each of its ``anyOf``; a list's items): an
    ``enum`` of strings is bounded by its choices."""
    found = [schema, *schema.get("anyOf", [])]
    items = [s["items"] for s in found if s.get("type") == "array" and "items" in s]
    return [s for s in found + items if s.get("type") == "string" and "enum" not in s]


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_every_string_argument_of_every_tool_has_a_length_bound(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
    unbounded = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, schema in tool.input_schema["properties"].items()
        for string in strings(schema)
        if not 0 < string.get("maxLength", 0) <= 10_000
    ]
    assert {t.name for t in tools} >= set(REQUIRED) and unbounded == []


async def test_an_oversized_model_for_specialize_is_refused_naming_it(folder: Folder) -> None:
    server, policy = make_server(folder, allowance=5)
    asked: list[str] = []

    async def answer(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    before = tree(folder.root)
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=answer) as client:
            result = await client.call_tool("specialize", {**REQUIRED["specialize"], "model": "m" * HUGE})
    assert result.is_error and "model" in text(result), text(result)
    assert "m" * 1000 not in text(result)  # the error does not echo the argument back
    assert asked == [] and policy.allowance_left == 5
    assert tree(folder.root) == before and not folder.spending_log.exists()


async def test_each_oversized_string_argument_is_an_error_naming_it(folder: Folder) -> None:
    server, policy = make_server(folder, allowance=5)
    before = tree(folder.root)
    refused: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            for tool in (await client.list_tools()).tools:
                for name, schema in tool.input_schema["properties"].items():
                    if not strings(schema) or tool.name not in REQUIRED:
                        continue
                    huge: Any = ["q" * HUGE] if schema.get("type") == "array" else "q" * HUGE
                    result = await client.call_tool(tool.name, {**REQUIRED[tool.name], name: huge})
                    assert result.is_error and name in text(result), (tool.name, name, text(result)[:300])
                    refused.append(f"{tool.name}.{name}")
    assert "specialize.model" in refused and "optimize.cases" in refused and "train.resume" in refused
    assert tree(folder.root) == before and policy.allowance_left == 5
