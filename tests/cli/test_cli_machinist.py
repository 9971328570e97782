"""``machine machinist`` offline, as a person would use it: the machinist's model scripted, the machine it
improves on a local model (a tiny one made here), the person typing at the chat's prompt. The rehearse
it proposes runs only after the person's yes, on the local harness red's model picks, and is logged as
consented in the conversation."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.tiny_model import needs_local_stack, tiny_model_folder

needs_local_stack()

ASK = "Rehearsing red on its 7 held-out cases costs at most $0.50. Shall I?"
REHEARSE = {"name": "rehearse", "arguments": {"name": "red", "budget_usd": 0.5, "cases": "holdout.json"}}
SCRIPT = {
    "rules": [
        {"match": "^improve", "turns": [{"tool_calls": [{"name": "list_machines"}]}, {"text": ASK}]},
        {
            "match": "^yes",
            "turns": [{"tool_calls": [REHEARSE]}, {"text": "Rehearsed red on its held-out cases."}],
        },
    ]
}


@pytest.mark.slow
def test_the_machinist_rehearses_a_local_machine_after_the_persons_yes(tmp_path: Path) -> None:
    model = tiny_model_folder(tmp_path / "tiny")
    shutil.copytree(REPO / "machines" / "red", tmp_path / "ws" / "machines" / "red")
    (tmp_path / "ws" / "machines" / "red" / "model.json").write_text(json.dumps({"model": f"local:{model}"}))
    script = tmp_path / "machinist.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    done = subprocess.run(
        [str(MACHINE_BIN), "machinist", "--harness", "scripted", "--script", str(script),
         "--workspace", str(tmp_path / "ws")],
        input="improve red please\nyes\n/quit\n", capture_output=True, text=True, timeout=300,
        env=clean_env({"MACHINE_LOCAL_MAX_TOKENS": "4"}), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ASK in done.stdout and "Rehearsed red on its held-out cases." in done.stdout
    assert "machinist" in done.stdout and "rehearse(" in done.stdout
    logged = [json.loads(line) for line in (tmp_path / "ws" / ".machine" / "spending.jsonl").open()]
    [rehearsed] = [line for line in logged if line["tool"] == "rehearse"]
    assert rehearsed["consent"]["how"] == "conversation" and "'yes'" in rehearsed["consent"]["detail"]
    assert rehearsed["machine"] == "red" and rehearsed["budget_usd"] == 0.5
    from machine import open_workspace

    runs = list(open_workspace(tmp_path / "ws").store.iter_runs("red"))
    assert len(runs) == 7 and {r.harness for r in runs} == {"local"}
