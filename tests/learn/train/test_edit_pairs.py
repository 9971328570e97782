"""A change the person declined, then another to the same file they approved, is a preference pair in
``export --pairs`` (kind ``edit``): the approved turn chosen over the declined one, on the conversation
before the declined turn; a refusal by policy makes none."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from helpers.dev_project import setup

from machine.clients.scripted import ScriptedHarness
from machine.learn import export
from machine.ops import open_workspace
from machine.runs import EditAnswer, EditProposal


def test_a_declined_change_then_an_approved_one_make_a_pair(tmp_path: Path) -> None:
    root, script, project = setup(tmp_path)
    ws = open_workspace(root, harness=ScriptedHarness(script))
    ws.project = project

    async def approve(proposal: EditProposal) -> EditAnswer:
        return EditAnswer("yes" if proposal.after and "'hey'" in proposal.after else "no")

    run = anyio.run(lambda: ws.run("dev", "try again", approve_edit=approve))
    assert (project / "app.py").read_text().endswith("'hey'\n")
    ws.edits = "deny"
    anyio.run(lambda: ws.run("dev", "try again"))  # refused by policy: no pair
    out = tmp_path / "pairs.jsonl"
    report = export(ws, "dev", out=out, pairs=True)
    assert report.pairs == {"edit": 1}
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["metadata"] == {
        "kind": "edit", "machine": "dev", "case_id": None, "chosen_run_id": run.id, "rejected_run_id": run.id,
    }  # fmt: skip
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][1]["content"] == "try again"
    [rejected] = row["rejected"][0]["tool_calls"]
    [chosen] = row["chosen"][0]["tool_calls"]
    assert json.loads(rejected["function"]["arguments"])["new"] == "'hello'"
    assert json.loads(chosen["function"]["arguments"])["new"] == "'hey'"
