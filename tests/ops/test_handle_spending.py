"""The SDK handle spends as the command and the tools do: each spending call writes one line to the
workspace's spending log, consented by the person's own code, with what that call spent from the handle's
budget (which outlives its calls); a call that fails before spending writes none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_workspace import write_workspace

import machine
from machine import BadInputError
from machine.clients.scripted import ScriptedHarness

RUN_COST = 0.186  # one turn of the costly script at Qwen3.8-27B's price


def lines(root: Path) -> list[dict[str, Any]]:
    path = root / ".machine" / "spending.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_each_call_logs_what_it_spent_consented_by_code(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    greet = machine.load("greet", workspace=ws.root, harness=ScriptedHarness(ws.costly_script), budget=5)
    await greet.suite(trials=2)
    await greet.suite()
    first, second = lines(ws.root)
    assert [first["tool"], second["tool"]] == ["suite", "suite"]
    assert first["machine"] == second["machine"] == "greet"
    assert first["spent_usd"] == pytest.approx(6 * RUN_COST)  # 3 cases x 2 trials
    assert second["spent_usd"] == pytest.approx(3 * RUN_COST)  # its own runs, not the handle's total
    assert first["budget_usd"] == 5
    detail = "machine.load('greet').suite(...) with a budget of $5"
    assert first["consent"] == {"how": "code", "detail": detail}
    assert first["correlation_id"] != second["correlation_id"]


async def test_a_call_refused_before_spending_writes_no_line(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    greet = machine.load("greet", workspace=ws.root, harness=ScriptedHarness(ws.costly_script), budget=5)
    with pytest.raises(BadInputError):
        await greet.suite(trials=0)
    with pytest.raises(BadInputError, match="trials must be"):
        await greet.optimize(trials=0)
    assert lines(ws.root) == []
