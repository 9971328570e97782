"""``machine export`` end to end: what it prints (the funnel, what it wrote), ``--json``, options it
refuses in one error line, a chat's ``/good --as TEXT`` answer in the exported row, and a reply marked
``/bad`` earlier in a conversation written as context (``"weight": 0``), never as a target."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import Result

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

Invoke = Callable[..., Result]


@pytest.fixture
def sampled(ws: WorkspaceFolder, invoke: Invoke) -> WorkspaceFolder:
    """The test workspace after one scripted suite of greet: ann 1.0, bob 0.83, cat 0.33."""
    done = invoke("suite", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root)
    assert done.exit_code == 0, done.output
    return ws


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def one_error_line(done: Result, *fragments: str) -> str:
    assert done.exit_code == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_held_out_runs_are_left_out_unless_asked_for(sampled: WorkspaceFolder, invoke: Invoke) -> None:
    """``machine export`` leaves out the runs of held-out cases (the gate measures them) and says so;
    ``--include-holdout`` asks for them by name."""
    (sampled.root / "machines" / "greet" / "holdout.json").write_text(
        json.dumps([{"id": "h-bob", "input": "Greet Bob."}]), encoding="utf-8"
    )
    out = sampled.root / "greet.jsonl"
    args = ("--out", out, "--min-score", "0.5", "--workspace", sampled.root)
    done = invoke("export", "greet", *args)
    assert done.exit_code == 0, done.output
    assert [r["metadata"]["case_id"] for r in rows(out)] == ["ann"]  # bob's run is the held-out "Greet Bob."
    assert "1 of cases not held out" in done.stdout
    assert (
        "left out the runs of 1 held-out case, which the gate measures (--include-holdout exports them)"
        in (done.stdout)
    )
    done = invoke("export", "greet", *args, "--include-holdout")
    assert done.exit_code == 0, done.output
    assert sorted(r["metadata"]["case_id"] for r in rows(out)) == ["ann", "bob"]
    assert "left out" not in done.stdout


def test_export_prints_the_funnel_and_what_it_wrote(sampled: WorkspaceFolder, invoke: Invoke) -> None:
    out = sampled.root / "data" / "greet.jsonl"
    done = invoke("export", "greet", "--out", out, "--workspace", sampled.root)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        "of 3 stored runs: 3 that finished, 1 scoring at least 1, 1 graded under the current rubric",
        f"wrote 1 example from 1 run to {out} (readable only by you)",
        "from: 1 of Qwen/Qwen3.8-27B on scripted",
    ]
    [row] = rows(out)
    assert (row["metadata"]["case_id"], row["metadata"]["harness"]) == ("ann", "scripted")
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert row["tools"][0]["function"]["name"] == "shout"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    done = invoke(
        "export", "greet", "--out", out, "--min-score", "0.5", "--per-turn", "--workspace", sampled.root
    )
    assert done.exit_code == 0, done.output
    assert "wrote 3 examples from 2 runs" in done.stdout  # ann's two replies, bob's one


def test_export_json(sampled: WorkspaceFolder, invoke: Invoke) -> None:
    out = sampled.root / "greet.jsonl"
    done = invoke("export", "greet", "--out", out, "--best", "1", "--json", "--workspace", sampled.root)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert (report["machine"], report["out"], report["runs"], report["rows"]) == ("greet", str(out), 1, 1)
    assert report["stored"] == 3 and report["source"] is None and report["per_turn"] is False
    assert report["funnel"][-1] == {"keeps": "runs graded under the current rubric", "left": 1}


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--best", "0"), ("--best", "0 is not in the range")),
        (("--tags", "maybe"), ("--tags", "'maybe' is not one of")),
        (("--tree", "--from", "greet/loud"), ("another machine's runs (source), not both",)),
        (("--min-score", "2"), ("--min-score", "2.0 is not in the range 0<=x<=1")),
        (("--since", "no-such-suite"), ("runs since no-such-suite",)),
        (("--cases", "missing.json"), ("missing.json", "does not exist")),
    ],
    ids=["best", "tags", "tree-and-from", "min-score", "since", "cases"],
)
def test_bad_options_are_one_error_line_and_write_nothing(
    sampled: WorkspaceFolder, invoke: Invoke, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = sampled.root / "greet.jsonl"
    done = invoke("export", "greet", "--out", out, *args, "--workspace", sampled.root)
    one_error_line(done, *fragments)
    assert not out.exists()
    assert not [p for p in sampled.root.iterdir() if p.name.startswith(".greet.jsonl")]


def test_an_unknown_machine_and_no_runs(ws: WorkspaceFolder, invoke: Invoke) -> None:
    out = ws.root / "x.jsonl"
    one_error_line(invoke("export", "nosuch", "--out", out, "--workspace", ws.root), "no machine 'nosuch'")
    one_error_line(invoke("export", "greet", "--out", out, "--workspace", ws.root), "has no stored runs")
    assert not out.exists()


def test_good_as_in_a_chat_is_the_exported_answer(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    args = ["run", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    done = machine_cmd(*args, stdin="hi\n/good --as Hello! How can I help?\n/quit\n")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "good (learn this answer: 'Hello! How can I help?')" in done.stdout
    out = ws.root / "good.jsonl"
    done = machine_cmd("export", "greet", "--out", out, "--tags", "good", "--workspace", ws.root)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "wrote 1 example from 1 run" in done.stdout
    [row] = rows(out)
    messages = row["messages"]
    assert messages[-2:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
    ]
    stored = ws.get(str(row["metadata"]["run_id"]))
    assert stored.output == "hello there"  # the run keeps its own answer; only the export learns the other
    assert [(t.kind, t.answer) for t in stored.tags] == [("good", "Hello! How can I help?")]


def test_a_reply_marked_bad_earlier_in_the_chat_is_context_in_the_row(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    """A conversation whose first reply the person marked bad and whose second turn they marked good:
    the good turn's row holds the bad reply as its history, with ``"weight": 0`` (OpenAI's chat format
    for a turn not to learn), and the good turn's own steps unweighted (learned)."""
    args = ["run", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    done = machine_cmd(*args, stdin="hi\n/bad too plain\ngreet ann\n/good --trace\n/quit\n")
    assert done.returncode == 0, (done.stdout, done.stderr)
    out = ws.root / "good.jsonl"
    done = machine_cmd("export", "greet", "--out", out, "--workspace", ws.root)
    assert done.returncode == 0, (done.stdout, done.stderr)
    [row] = rows(out)  # the turn marked bad is no row of its own
    said = [(m["role"], m.get("content"), m.get("weight", 1)) for m in row["messages"][1:]]
    assert said == [
        ("user", "hi", 1),
        ("assistant", "hello there", 0),
        ("user", "greet ann", 1),
        ("assistant", None, 1),  # the shout tool call
        ("tool", "HELLO ANN", 1),
        ("assistant", "hello ann", 1),
    ]
    assert all("weight" not in m for m in row["messages"] if m["role"] != "assistant")
    turns = ws.root / "turns.jsonl"
    done = machine_cmd("export", "greet", "--out", turns, "--per-turn", "--workspace", ws.root)
    assert done.returncode == 0, (done.stdout, done.stderr)
    ends = [(r["messages"][-1].get("content"), r["metadata"]["turn"]) for r in rows(turns)]
    assert ends == [(None, 1), ("hello ann", 2)]  # a row ends at each step learned, never at the bad reply
