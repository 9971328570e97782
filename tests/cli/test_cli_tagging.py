"""``machine tagged``, ``observe``, ``observed``, ``fork``, ``correction`` and ``export --pairs`` on the
test workspace, in this process through click's runner (the chat's marks at a real terminal are
test_cli_chat_pty.py's)."""

from __future__ import annotations

import json
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Invoke, WorkspaceFolder


def test_tags_listed_after_a_chat(ws: WorkspaceFolder, invoke: Invoke) -> None:
    done = invoke("tagged", "--workspace", ws.root)
    assert done.exit_code == 0 and "no run is marked yet" in done.stdout
    chat = ["run", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    assert invoke(*chat, stdin="hi\n/bad too plain\nhi\n/good --trace\n/quit\n").exit_code == 0
    done = invoke("tagged", "greet", "--workspace", ws.root)
    assert done.exit_code == 0, done.output
    header, newest, oldest = done.stdout.splitlines()
    assert header.split() == ["id", "when", "mark", "input", "→", "output"]
    assert "good (whole trajectory)" in newest and "bad: too plain" in oldest
    listed = json.loads(invoke("tagged", "--json", "--limit", "1", "--workspace", ws.root).stdout)
    assert [(r["machine"], [t["kind"] for t in r["tags"]], r["tags"][0]["trace"]) for r in listed] == [
        ("greet", ["good"], True)
    ]
    unknown = invoke("tagged", "gret", "--workspace", ws.root)
    assert unknown.exit_code == 2 and "greet" in unknown.stderr


def test_observe_is_off_until_turned_on(ws: WorkspaceFolder, invoke: Invoke) -> None:
    assert f"observing is off for {ws.root}" in invoke("observe", "--workspace", ws.root).stdout
    assert (
        "observing is off (`machine observe on` turns it on)"
        in invoke("observed", "--workspace", ws.root).stdout
    )
    done = invoke("observe", "on", "--workspace", ws.root)
    assert done.exit_code == 0 and "observing is on" in done.stdout
    assert stat.S_IMODE(os.stat(ws.root / ".machine" / "observe.json").st_mode) == 0o600
    assert "no observed runs yet; observing is on" in invoke("observed", "--workspace", ws.root).stdout
    assert "observing is off" in invoke("observe", "off", "--workspace", ws.root).stdout
    assert invoke("observe", "maybe", "--workspace", ws.root).exit_code == 2


def test_correction_links_a_new_run_and_export_pairs_them(
    ws: WorkspaceFolder, invoke: Invoke, tmp_path: Path
) -> None:
    script = json.loads(ws.script.read_text())
    script["rules"].insert(0, {"match": "Correction: be warmer", "turns": [{"text": "hello, friend"}]})
    ws.script.write_text(json.dumps(script))
    scripted = ["--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    refused = invoke("fork", "be", "warmer", *scripted)
    assert refused.exit_code == 2 and "no observed run to fork" in refused.stderr and ws.count() == 0
    # the break: it named `--id`, which fork does not take; correction does
    assert refused.stderr.rstrip().endswith("; `machine correction --id ID NOTE` corrects a stored run")
    made = json.loads(invoke("run", "greet", "hi", "--json", *scripted).stdout)
    done = invoke("correction", "--id", made["id"], "be", "warmer", *scripted)
    assert done.exit_code == 0, done.output
    [original, corrected] = ws.runs("greet")
    assert (corrected.forked_from, corrected.correction, corrected.output) == (
        original.id, "be warmer", "hello, friend"
    )  # fmt: skip
    assert f"run {corrected.id} corrects run {original.id}" in done.stdout
    out = tmp_path / "pairs.jsonl"
    done = invoke("export", "greet", "--pairs", "--out", out, "--workspace", ws.root)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        f"wrote 1 preference pair (1 correction) from 2 runs to {out} (readable only by you)"
    ]
    assert "prompts and outputs" in done.stderr
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["chosen"][0]["content"], row["rejected"][0]["content"]) == ("hello, friend", "hello there")
    again = invoke("export", "greet", "--pairs", "--out", out, "--json", "--workspace", ws.root)
    summary = json.loads(again.stdout)
    assert summary["pairs"] == {"correction": 1} and summary["rows"] == 1


def test_data_counts_the_marks_and_says_where_they_are(ws: WorkspaceFolder, invoke: Invoke) -> None:
    chat = ["run", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    typed = "hi\n/good\n/bad too plain\n/correct add the name\nhi\n/good\n/correct warmer\nhi\n/quit\n"
    assert invoke(*chat, stdin=typed).exit_code == 0
    done = invoke("data", "--workspace", ws.root)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        f"workspace {ws.root}",
        f"store {ws.root / '.machine' / 'store.db'} (readable only by you): 3 runs",
        "marked 1 good · 1 bad · 2 corrections; 0 corrected by a new run; 0 observed",
        "observing is off",
    ]
    shown = json.loads(invoke("data", "--json", "--workspace", ws.root).stdout)
    assert (shown["runs"], shown["good"], shown["bad"], shown["corrections"]) == (3, 1, 1, 2)
