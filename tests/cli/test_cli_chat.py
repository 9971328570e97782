"""Talking to a machine: ``machine run NAME`` with no INPUT reads lines from stdin, in a real subprocess."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder


def lines(*typed: str) -> str:
    return "".join(f"{line}\n" for line in typed)


def newest_runs(ws: WorkspaceFolder, machine_cmd: Command) -> list[dict[str, Any]]:
    done = machine_cmd("runs", "greet", "--json", "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def chat(ws: WorkspaceFolder, machine_cmd: Command, *typed: str, resume: bool = False) -> str:
    args = ["run", "greet", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    done = machine_cmd(*args, *(["--continue"] if resume else []), stdin=lines(*typed))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "spent $0.0000" in done.stderr
    return done.stdout


def test_interactive_run_scores_and_tags(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    out = chat(ws, machine_cmd, "hi", "/score", "/good", "/correct shorter please", "/machine", "/quit")
    assert "greet — Greet the person named in the input." in out
    assert "hello there" in out
    assert "✓ greets (×2, check:says_hello): 1.00" in out
    assert "score 1.00 → PASS" in out
    assert "greet on Qwen/Qwen3.8-27B: Greet the person named in the input." in out
    assert "tools: shout" in out
    [row] = newest_runs(ws, machine_cmd)
    assert f"marked run {row['id']} good" in out
    assert f"marked run {row['id']} correction: shorter please" in out
    stored = ws.get(row["id"])
    assert stored.output == "hello there"
    assert stored.scorecard is not None and stored.score == 1.0
    assert [(t.kind, t.note) for t in stored.tags] == [("good", None), ("correction", "shorter please")]
    assert stored.conversation_id
    assert ws.count() == 1


def test_continue_resumes_the_conversation(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    chat(ws, machine_cmd, "hi", "/quit")
    [first] = newest_runs(ws, machine_cmd)
    earlier = ws.get(first["id"])
    assert earlier.history == []
    out = chat(ws, machine_cmd, "hi again", "/quit", resume=True)
    assert f"resuming conversation {earlier.conversation_id} (2 messages)" in out
    second, again = newest_runs(ws, machine_cmd)
    assert again["id"] == first["id"]
    later = ws.get(second["id"])
    assert later.conversation_id == earlier.conversation_id
    assert [(m.role, m.content) for m in later.history] == [("user", "hi"), ("assistant", "hello there")]
    assert later.input == "hi again"


def test_without_continue_a_new_conversation_starts(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    chat(ws, machine_cmd, "hi", "/quit")
    chat(ws, machine_cmd, "hi there", "/quit")
    second, first = (ws.get(r["id"]) for r in newest_runs(ws, machine_cmd))
    assert second.conversation_id != first.conversation_id
    assert second.history == []


def test_continue_with_no_earlier_conversation(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    out = chat(ws, machine_cmd, "hi", "/quit", resume=True)
    assert "no earlier conversation with greet; starting a new one" in out
    assert ws.count() == 1


def test_eval_grades_every_exchange(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    args = ["run", "greet", "--eval", "--harness", "scripted", "--script", ws.script, "--workspace", ws.root]
    done = machine_cmd(*args, stdin=lines("hi", "greet cat", "/quit"))
    assert done.returncode == 0, done.stderr
    assert "score 1.00 → PASS" in done.stdout
    assert "score 0.33 → FAIL" in done.stdout
    assert [r["score"] for r in newest_runs(ws, machine_cmd)] == [1 / 3, 1.0]


def test_commands_before_any_exchange_and_unknown_ones(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    out = chat(ws, machine_cmd, "/score", "/correct", "/frobnicate", "hi", "/correct", "/quit")
    assert "/score applies to the last exchange, and there is none yet" in out
    assert "unknown command /frobnicate" in out
    assert "/correct needs a note" in out
    [row] = newest_runs(ws, machine_cmd)
    assert ws.get(row["id"]).tags == []


def test_a_failed_exchange_is_reported_and_the_chat_goes_on(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    out = chat(ws, machine_cmd, "nobody matches this", "hi", "/quit")
    assert "failed: no rule" in out
    assert "hello there" in out
    answered, failed = newest_runs(ws, machine_cmd)
    assert (answered["status"], failed["status"]) == ("ok", "error")
    assert ws.get(answered["id"]).history == []  # a failed exchange is not part of the conversation


def test_end_of_input_ends_the_chat(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    out = chat(ws, machine_cmd, "hi")
    assert "hello there" in out
    assert ws.count() == 1


def test_score_after_a_failed_exchange_grades_nothing(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    out = chat(ws, machine_cmd, "nobody matches this", "/score", "hi", "/quit")
    assert "score 0.33" not in out
    assert "hello there" in out  # the chat went on
    answered, failed = newest_runs(ws, machine_cmd)
    assert ws.get(failed["id"]).scorecard is None
    assert answered["status"] == "ok"
