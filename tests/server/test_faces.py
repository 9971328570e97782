"""The faces share one implementation: the MCP ``rehearse`` tool and ``machine suite`` plan and run a suite
the same way and report it with the same model; an error says what is wrong once, and each face says how
to get past it in its own terms."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import anyio
import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.server_workspace import Folder, make_server
from mcp import Client

from machine import CommitRefused, open_workspace
from machine.clients import make_harness
from machine.measure import SuiteReport
from machine.versions import commit, propose

# Calls red_mentioned on every message: right where the message says "red", wrong everywhere else.
ALWAYS_CALLS = {
    "rules": [
        {
            "match": "(?s).*",
            "turns": [{"tool_calls": [{"name": "red_mentioned", "arguments": {}}]}, {"text": "noted"}],
        }
    ]
}
REPORT = (set(SuiteReport.model_fields) | set(SuiteReport.model_computed_fields)) - {"suite_id"}
"""What a suite reports, but for its id (each invocation has its own)."""


def suite_fields(report: dict[str, Any]) -> dict[str, Any]:
    """The report but for what names its own runs (each case's run ids)."""
    fields = {key: report[key] for key in sorted(REPORT)}
    if "cases" in fields:
        fields["cases"] = [{k: v for k, v in case.items() if k != "runs"} for case in fields["cases"]]
    return fields


async def test_rehearse_and_machine_suite_give_the_same_report(folder: Folder) -> None:
    script = folder.root / "always.json"
    script.write_text(json.dumps(ALWAYS_CALLS), encoding="utf-8")
    server, _ = make_server(folder, allowance=1, script=script)
    with anyio.fail_after(60):
        async with Client(server) as client:
            rehearsed = await client.call_tool(
                "rehearse", {"name": "red", "budget_usd": 1, "cases": "holdout.json", "trials": 2}
            )
    assert not rehearsed.is_error
    over_mcp = rehearsed.structured_content
    args = ["suite", "red", "--cases", "holdout.json", "--trials", "2", "--json"]
    harness = ["--harness", "scripted", "--script", str(script), "--workspace", str(folder.root)]
    done = subprocess.run(
        [str(MACHINE_BIN), *args, *harness], capture_output=True, text=True, env=clean_env(), timeout=120
    )
    assert done.returncode == 0, done.stderr
    on_the_command_line = json.loads(done.stdout)
    assert suite_fields(over_mcp) == suite_fields(on_the_command_line)
    assert 0 < on_the_command_line["summary"]["mean"] < 1  # passes and failures, each where the other has it
    assert over_mcp["suite_id"] != on_the_command_line["suite_id"]
    assert (
        SuiteReport.model_validate(over_mcp).summary
        == SuiteReport.model_validate(on_the_command_line).summary
    )


async def test_a_refused_commit_says_how_to_force_it_in_each_faces_own_terms(folder: Folder) -> None:
    """One error, three spellings of its fix: ``force=True`` in Python, ``--force`` on the command line,
    ``force: true`` for an MCP tool; none speaks another face's language."""
    ws = open_workspace(folder.root, harness=make_harness("scripted", script=folder.script))
    await propose(ws, "red", model="Qwen/Qwen3.6-27B", trials=1)  # the same answers: not better, not passed
    await ws.aclose()
    with pytest.raises(CommitRefused) as refused:
        commit(ws, "red")
    in_python = str(refused.value)
    done = subprocess.run(
        [str(MACHINE_BIN), "commit", "red", "--workspace", str(folder.root)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    on_the_command_line = done.stderr
    server, _ = make_server(folder, allowance=0)
    with anyio.fail_after(60):
        async with Client(server) as client:
            called = await client.call_tool("commit", {"name": "red"})
    over_mcp = "\n".join(getattr(c, "text", "") for c in called.content)
    assert done.returncode == 2 and called.is_error
    for said in (in_python, on_the_command_line, over_mcp):
        assert "did not pass the promotion gate" in said
    assert "pass force=True to commit it anyway" in in_python
    assert "pass --force to commit it anyway" in on_the_command_line
    assert "call again with force: true to commit it anyway" in over_mcp
    assert "--force" not in in_python + over_mcp and "force=True" not in on_the_command_line + over_mcp
    assert "force: true" not in in_python + on_the_command_line
