"""``machine import``: a file's runs stored as observed runs and said in a line (or as JSON), a refused
file said in one error line with nothing stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers.import_files import chat_jsonl, workspace

from machine.workspace import Workspace


def test_import_stores_observed_runs_and_says_so(invoke: Callable[..., Result], tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    path = chat_jsonl(tmp_path / "chat.jsonl", rows=2)
    done = invoke("import", "shout", path, "--workspace", ws.root)
    assert done.exit_code == 0, done.output
    assert "imported 2 observed runs of shout" in done.stdout and "redacted 2 things" in done.stdout
    done = invoke("import", "shout", path, "--format", "chat", "--json", "--workspace", ws.root)
    report = json.loads(done.stdout)
    assert report["runs"] == 2 and report["format"] == "chat" and len(report["run_ids"]) == 2
    assert Workspace(ws.root).store.count() == 4


def test_a_refused_file_is_one_error_line(invoke: Callable[..., Result], tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n")
    done = invoke("import", "shout", bad, "--format", "chat", "--workspace", ws.root)
    assert done.exit_code == 2 and "line 1" in done.stderr and "nothing was imported" in done.stderr
    odd = tmp_path / "odd.txt"
    odd.write_text("hello")
    done = invoke("import", "shout", odd, "--workspace", ws.root)
    assert done.exit_code == 2 and "--format chat" in done.stderr
    assert Workspace(ws.root).store.count() == 0
