"""Budgets over MCP: only a JSON number is a budget, and the allowance is one running total however many
calls run at once, with an overdraft carried into the next calls."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from helpers.server_workspace import RUN_COST, Folder, make_server
from mcp import Client

LIMIT = 60  # seconds any one test's calls may take


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("value", [True, False, "1", "0.5", "lots", None, [1]])
async def test_a_budget_that_is_not_a_number_is_refused(folder: Folder, value: object) -> None:
    server, policy = make_server(folder, allowance=5, script=folder.costly)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            result = await client.call_tool("rehearse", {"name": "red", "budget_usd": value})
            recent = await client.call_tool("recent_runs", {"name": "red"})
    assert result.is_error and "budget_usd" in text(result)
    assert recent.structured_content["runs"] == []  # nothing ran
    assert policy.allowance_left == 5 and policy.log() == []


async def test_concurrent_calls_share_one_allowance_and_carry_the_overdraft(folder: Folder) -> None:
    allowance = 2.0
    server, policy = make_server(folder, allowance=allowance, script=folder.costly)
    results: list[Any] = []

    async def rehearse(client: Client) -> None:
        results.append(await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.2}))

    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(rehearse, client)
            after = await client.call_tool("rehearse", {"name": "red", "budget_usd": 0.2})
    logged = [json.loads(line) for line in folder.spending_log.read_text().splitlines()]
    total = sum(entry["spent_usd"] for entry in logged)
    assert total == pytest.approx(sum(r.structured_content["spent_usd"] for r in results if not r.is_error))
    assert total <= allowance + RUN_COST  # one running total: past it by at most the step in flight
    assert policy.ledger is not None and policy.ledger.spent == pytest.approx(total)
    assert policy.allowance_left == pytest.approx(allowance - total)  # an overdraft is not forgotten
    # Each call's budget lets a second run start ($0.372 a call); the sixth call crossed the allowance
    # with one run and the four after it were refused before spending anything.
    assert total == pytest.approx(11 * RUN_COST)
    assert sum(r.is_error for r in results) == 4
    assert after.is_error and "overdrawn by $0.05" in text(after)
