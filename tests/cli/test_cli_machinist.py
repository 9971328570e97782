"""``machine machinist`` offline, as a person would use it at a terminal: the machinist's model scripted,
the machine it improves on a local model (a tiny one made here), the person typing at the chat's prompt.
The rehearse it proposes runs only after the person's yes to the program's own question, on the local
harness red's model picks, and is logged as consented at the terminal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.pty_session import PtySession
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
    argv = [str(MACHINE_BIN), "machinist", "--harness", "scripted", "--script", str(script),
            "--workspace", str(tmp_path / "ws")]  # fmt: skip
    env = clean_env({"MACHINE_LOCAL_MAX_TOKENS": "4"})
    session = PtySession(argv, env=env, cwd=tmp_path, timeout=300)
    try:
        session.expect("you> ")
        session.send("improve red please")
        assert ASK in session.expect("you> ")
        session.send("yes")
        asked = session.expect("[y/N")
        assert "Rehearse machine 'red': run and grade 7 cases from holdout.json" in asked
        assert "on the local harness" in asked
        session.send("y")
        done = session.expect("you> ")
        assert "Rehearsed red on its held-out cases." in done and "rehearse(" in done
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    logged = [json.loads(line) for line in (tmp_path / "ws" / ".machine" / "spending.jsonl").open()]
    [rehearsed] = [line for line in logged if line["tool"] == "rehearse"]
    assert rehearsed["consent"]["how"] == "terminal" and "'y'" in rehearsed["consent"]["detail"]
    assert rehearsed["machine"] == "red" and rehearsed["budget_usd"] == 0.5
    from machine import open_workspace

    runs = list(open_workspace(tmp_path / "ws").store.iter_runs("red"))
    assert len(runs) == 7 and {r.harness for r in runs} == {"local"}
