"""The MCP ``specialize`` tool and ``machine specialize`` are one operation: on two copies of the same
workspace with the same scripted author they write the same child and cases and give the same report,
but for what differs by nature (run ids, timings), what the tool adds (its budget and consent) and how
each face spells a next step (a command to paste on the command line, plain words for an agent)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.learn_server import author_script
from helpers.server_workspace import Folder, copy_red, make_server
from mcp import Client

from machine.learn import Specialization

VARYING = {"run_id", "samples", "seconds", "check_seconds", "next_steps"}
"""What two runs of the same work never share: run ids (and the sample runs they name) and timings; and
the next steps, which each face spells its own way (compared apart)."""


def steady(value: Any) -> Any:
    """``value`` without the ``VARYING`` keys, at any depth."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


@pytest.mark.slow
async def test_specialize_tool_and_command_give_the_same_report(folder: Folder, tmp_path: Path) -> None:
    script = author_script(tmp_path / "author.json")
    server, _ = make_server(folder, allowance=1, script=script)
    args = {"parent": "red", "focus": "noting red", "slug": "noted", "cases": 4, "retries": 1}
    with anyio.fail_after(120):
        async with Client(server) as client:
            called = await client.call_tool("specialize", {**args, "budget_usd": 1})
    assert not called.is_error
    over_mcp = called.structured_content
    other = copy_red(tmp_path / "other")
    command = ["specialize", "red", "--focus", "noting red", "--slug", "noted", "--cases", "4"]
    scripted = ["--retries", "1", "--harness", "scripted", "--script", str(script)]
    done = subprocess.run(
        [str(MACHINE_BIN), *command, *scripted, "--json", "--workspace", str(other.root)],
        capture_output=True, text=True, env=clean_env(), timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    on_the_command_line = json.loads(done.stdout)
    assert set(over_mcp) - set(on_the_command_line) == {"budget_usd", "spent_usd", "consent"}
    fields = set(Specialization.model_fields) | {"cost"}
    assert steady({k: over_mcp[k] for k in fields}) == steady(on_the_command_line)
    assert over_mcp["next_steps"][1:] == ["suite red/noted with trials 4", "train red/noted with best of 4"]
    assert on_the_command_line["next_steps"][1:] == [
        "`machine suite red/noted --trials 4`",
        "`machine train red/noted --best-of 4`",
    ]  # to paste, as every hint on the command line
    assert on_the_command_line["accepted"] and on_the_command_line["kept_cases"] > 0
    assert len(over_mcp["samples"]) == len(on_the_command_line["samples"]) == 3
    for name in ("machine.py", "rubric.py", "instructions.md", "cases.json", "holdout.json"):
        mine = folder.root / "machines" / "red" / "noted" / name
        theirs = other.root / "machines" / "red" / "noted" / name
        assert mine.read_text(encoding="utf-8") == theirs.read_text(encoding="utf-8"), name
