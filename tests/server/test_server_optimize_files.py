"""The MCP ``optimize`` tool reads its cases and held-out cases as ``rehearse`` does: by name, in the
machine's own folder, never a path elsewhere; the two must differ (swapped, the optimizer would see the
held-out cases); and the person is asked with both files named. Through the SDK's in-process client, on
a copy of red with a scripted optimizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from helpers.learn_server import optimizer_script
from helpers.server_workspace import Folder, make_server
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

LIMIT = 120
OPTIMIZE = {"name": "red", "budget_usd": 1, "trials": 1, "rounds": 1, "candidates": 1, "min_z": 1}


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def declining(asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    return callback


async def test_cases_elsewhere_on_disk_are_refused_before_anything_is_read_or_asked(
    folder: Folder, tmp_path: Path
) -> None:
    """The break: MCP optimize read any file on disk (an absolute path), and its contents went to both
    models and into a stored run."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps([{"id": "key", "input": "sk-live-very-secret"}]), encoding="utf-8")
    (folder.root / "machines" / "red" / "linked.json").symlink_to(secret)
    server, _ = make_server(folder, allowance=2, script=optimizer_script(tmp_path / "optimizer.json"))
    asked: list[str] = []
    results = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=declining(asked)) as client:
            for argument in ("cases", "holdout"):
                for named in (str(secret), "../../../secret.json", "linked.json"):
                    results.append(await client.call_tool("optimize", {**OPTIMIZE, argument: named}))
    assert asked == []  # refused before the person is asked
    for result in results:
        assert result.is_error and "is not a cases file of machine 'red'" in text(result), text(result)
        assert "available: cases.json" in text(result)
    store = folder.root / ".machine" / "store.db"
    assert not store.exists() or b"sk-live-very-secret" not in store.read_bytes()


async def test_swapped_cases_and_held_out_cases_are_refused(folder: Folder, tmp_path: Path) -> None:
    server, _ = make_server(folder, allowance=2, script=optimizer_script(tmp_path / "optimizer.json"))
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            swapped = await client.call_tool(
                "optimize", {**OPTIMIZE, "cases": "holdout.json", "holdout": "cases.json"}
            )
    assert swapped.is_error
    assert "the cases the optimizer would be shown are its held-out cases (holdout.json)" in text(swapped)
    assert "call again with holdout: holdout.json" in text(swapped)


async def test_the_consent_question_names_both_files(folder: Folder, tmp_path: Path) -> None:
    server, _ = make_server(folder, script=optimizer_script(tmp_path / "optimizer.json"))
    asked: list[str] = []
    with anyio.fail_after(LIMIT):
        async with Client(server, elicitation_callback=declining(asked)) as client:
            await client.call_tool("optimize", OPTIMIZE)
            (folder.root / "machines" / "red" / "holdout.json").unlink()
            await client.call_tool("optimize", OPTIMIZE)
    first, second = asked
    assert "shown the cases of cases.json" in first
    assert "on the held-out cases of holdout.json, which the optimizer never sees" in first
    assert "with no held-out cases, so a rewrite that memorized the cases cannot be told apart" in second
