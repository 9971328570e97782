"""``ask_machine``: a host hands a machine one task through the SDK's in-process client; the run is kept
as an unlabeled observed run only while the workspace observes, and never without the person's consent."""

from __future__ import annotations

from typing import Any

import anyio
from helpers.server_workspace import Folder, make_server
from mcp import Client
from mcp_types import ElicitRequestParams, ElicitResult

from machine import SQLiteStore
from machine.workspace import set_observing

LIMIT = 60
TASK = {"name": "red", "input": "Roses are red.", "budget_usd": 1}


def stored(folder: Folder) -> list[Any]:
    path = folder.root / ".machine" / "store.db"
    if not path.exists():
        return []
    store = SQLiteStore(path)
    try:
        return list(store.iter_runs("red"))
    finally:
        store.close()


async def ask(folder: Folder, **server: Any) -> Any:
    made, _ = make_server(folder, **server)
    with anyio.fail_after(LIMIT):
        async with Client(made) as client:
            return await client.call_tool("ask_machine", TASK)


async def test_not_observing_answers_and_keeps_nothing(folder: Folder) -> None:
    result = await ask(folder, allowance=1)
    assert not result.is_error, result.content
    data = result.structured_content
    assert (data["output"], data["status"], data["kept"], data["run_id"]) == (
        "You mentioned red; noted.", "ok", False, None
    )  # fmt: skip
    assert data["consent"]["how"] == "allowance"
    assert stored(folder) == []


async def test_observing_keeps_the_run_unlabeled(folder: Folder) -> None:
    set_observing(folder.root / ".machine", True)
    data = (await ask(folder, allowance=1)).structured_content
    [run] = stored(folder)
    assert data["kept"] is True and data["run_id"] == run.id
    assert (run.observed, run.tags, run.scorecard, run.input) == (True, [], None, "Roses are red.")
    assert [c.name for c in run.tool_calls] == ["red_mentioned"]


async def test_a_declined_task_runs_nothing(folder: Folder) -> None:
    set_observing(folder.root / ".machine", True)

    async def decline(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        assert "Run machine 'red' once on the host's task with model" in params.message
        return ElicitResult(action="accept", content={"approve": False})

    made, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(made, elicitation_callback=decline) as client:
            result = await client.call_tool("ask_machine", TASK)
    assert result.is_error and "declined" in str(result.content)
    assert stored(folder) == []
