"""``machine machinist`` at a real terminal on its own shipped script (``script.json``, which its suite
also replays): after the person's yes the rehearse goes through, and the machinist's reply claims nothing
the tool's result contradicts ("Nothing was spent" after a rehearse that ran); the chat shows no log
records of the in-process server (``INFO``, a ``file.py:123`` source location)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, REPO, clean_env
from helpers.pty_session import PtySession

from machine import open_workspace

SCRIPT = REPO / "machinist" / "machines" / "machinist" / "script.json"
LOG_RECORD = re.compile(r"\b(INFO|DEBUG)\b|\b\w+\.py:\d+\b")
"""What a log record shows: its level, or the source location a rich handler prints beside it."""


@pytest.mark.slow
def test_the_shipped_script_after_a_yes_reports_only_what_the_result_says(tmp_path: Path) -> None:
    shutil.copytree(REPO / "machines" / "red", tmp_path / "ws" / "machines" / "red")
    argv = [str(MACHINE_BIN), "machinist", "--harness", "scripted", "--script", str(SCRIPT),
            "--workspace", str(tmp_path / "ws")]  # fmt: skip
    session = PtySession(argv, env=clean_env({}), cwd=tmp_path, timeout=120)
    try:
        session.expect("you> ")
        session.send("How well does my machine red do? Can you check it?")
        assert "costs at most $0.50. Shall I?" in session.expect("you> ")
        session.send("yes")
        assert "Rehearse machine 'red'" in session.expect("[y/N")
        session.send("y")
        done = session.expect("you> ")
        assert 'rehearse({"name": "red", "budget_usd": 0.5' in done
        assert "That was the rehearse of red's 17 cases, at most $0.50" in done
        session.send("/quit")
        assert session.close() == 0
    finally:
        session.kill()
    assert "Nothing was spent" not in session.seen and "could not rehearse" not in session.seen
    assert not LOG_RECORD.search(session.seen), LOG_RECORD.findall(session.seen)
    runs = list(open_workspace(tmp_path / "ws").store.iter_runs("red"))
    assert len(runs) == 17  # the rehearse went through: a reply saying nothing ran would be false
    logged = [json.loads(line) for line in (tmp_path / "ws" / ".machine" / "spending.jsonl").open()]
    assert [line["consent"]["how"] for line in logged if line["tool"] == "rehearse"] == ["terminal"]
