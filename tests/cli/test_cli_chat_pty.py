"""The chat's marks typed at a real terminal (a pseudo-terminal, the console script on its other side):
/good with its options, /bad, /correct, /tagged and the footer of counts; then what export makes of
each mark, row by row."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from helpers.env import MACHINE_BIN, clean_env
from helpers.pty_session import PtySession

from machine.runs import to_openai

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Command, WorkspaceFolder

INSTRUCTIONS = "Say hello to the person named in the input, briefly."


def say(session: PtySession, line: str) -> str:
    """Type ``line`` and return what the terminal showed until the next prompt."""
    session.send(line)
    return session.expect("you> ")


def test_each_chat_command_in_a_terminal_and_what_export_makes_of_it(
    ws: WorkspaceFolder, machine_cmd: Command, tmp_path: Path
) -> None:
    argv = [str(MACHINE_BIN), "run", "greet", "--harness", "scripted", "--script", str(ws.script)]
    session = PtySession([*argv, "--workspace", str(ws.root)], env=clean_env(), cwd=ws.root)
    try:
        assert "/good [--as TEXT] [--trace] [--reasoning] [NOTE]" in session.expect("you> ")
        assert "/tagged applies" not in say(session, "/tagged")
        shown = say(session, "hi")
        assert "hello there" in shown and "this session: 0 good · 0 bad · 0 corrections" in shown
        assert "this session: 1 good · 0 bad" in say(session, "/good")
        shown = say(session, "/bad too plain")  # replaces the good mark: a run has one verdict
        assert "bad: too plain" in shown and "this session: 0 good · 1 bad · 0 corrections" in shown
        assert "this session: 0 good · 1 bad · 1 correction\n" in say(session, "/correct add the name")
        assert "/bad needs a note" in say(session, "/bad")
        say(session, "greet ann")
        shown = say(session, "/good --trace the tool use is right")
        assert "good (whole trajectory): the tool use is right" in shown
        say(session, "greet bob")
        shown = say(session, '/good --as "hello bob" short and warm')
        assert "good (learn this answer: 'hello bob'): short and warm" in shown
        assert "this session: 2 good · 1 bad · 1 correction" in shown
        assert "--as's quote is not closed" in say(session, '/good --as "hello')
        listed = say(session, "/tagged")
        session.send("/quit")
        assert session.close() == 0
    finally:
        if session.process.poll() is None:
            session.process.kill()
    hi, ann, bob = ws.runs("greet")
    assert [(t.kind, t.note) for t in hi.tags] == [("bad", "too plain"), ("correction", "add the name")]
    assert [(t.kind, t.trace, t.answer) for t in ann.tags] == [("good", True, None)]
    assert [(t.kind, t.trace, t.answer, t.note) for t in bob.tags] == [
        ("good", False, "hello bob", "short and warm")
    ]
    marks = ((hi, "correction: add the name"), (ann, "good (whole trajectory)"), (bob, "good (learn"))
    for run, said in marks:
        line = next(line for line in listed.splitlines() if line.startswith(run.id))
        assert said in line

    out = tmp_path / "good.jsonl"
    done = machine_cmd("export", "greet", "--out", out, "--workspace", ws.root)
    assert done.returncode == 0, done.stderr
    assert "it holds the runs' prompts and outputs" in done.stderr
    exported = map(json.loads, out.read_text().splitlines())
    rows = {row["metadata"]["run_id"]: row["messages"] for row in exported}
    assert set(rows) == {ann.id, bob.id}  # the bad mark keeps "hi" out
    # each row: the conversation before the exchange, then the exchange as it was marked
    # (an earlier reply is context, weight 0, never a target: "hi" was marked bad)
    earlier = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello there", "weight": 0},
    ]
    assert rows[ann.id][1:3] == earlier
    assert [m["role"] for m in rows[ann.id][3:]] == ["user", "assistant", "tool", "assistant"]
    assert all("weight" not in m for m in rows[ann.id][3:])  # the marked exchange is what it learns
    expected = to_openai(INSTRUCTIONS, [*ann.history, *ann.trajectory], send_reasoning=False)
    assert rows[ann.id] == [*expected[:2], {**expected[2], "weight": 0}, *expected[3:]]
    assert rows[ann.id][4]["tool_calls"][0]["function"]["name"] == "shout"
    assert rows[ann.id][-1] == {"role": "assistant", "content": "hello ann"}
    assert rows[bob.id] == [
        {"role": "system", "content": INSTRUCTIONS},
        *[  # hi, and ann's exchange with its tool call: context, its replies weight 0
            {**m, "weight": 0} if m["role"] == "assistant" else m
            for m in to_openai("", bob.history, send_reasoning=False)
        ],
        {"role": "user", "content": "greet bob"},
        {"role": "assistant", "content": "hello bob"},
    ]
    assert len(bob.history) == 6


def test_the_shorthand_opens_the_chat_and_an_unknown_option_is_refused_not_noted(
    ws: WorkspaceFolder, tmp_path: Path
) -> None:
    """The breaks: `machine greet` was "no such command" (the seed's users type it for `machine run
    greet`), and `/good --out FILE` saved "--out FILE" as the note."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    argv = [str(MACHINE_BIN), "greet", "--harness", "scripted", "--script", str(ws.script)]
    session = PtySession([*argv, "--workspace", str(ws.root)], env=clean_env(), cwd=elsewhere)
    try:
        assert "greet — " in session.expect("you> ")
        assert "hello there" in say(session, "hi")
        for typed, command in (("/good --out good.jsonl", "/good"), ("/bad --verbose", "/bad")):
            shown = say(session, typed)
            assert f"{command} has no option {typed.split()[1]}: " in shown, shown
            assert "marked run" not in shown and "this session:" not in shown
        shown = say(session, "/good -- --out is what I meant")
        assert "good: --out is what I meant" in shown and "this session: 1 good" in shown
        session.send("/quit")
        assert session.close() == 0
    finally:
        if session.process.poll() is None:
            session.process.kill()
    [hi] = ws.runs("greet")
    assert [(t.kind, t.note) for t in hi.tags] == [("good", "--out is what I meant")]
    assert not (elsewhere / "good.jsonl").exists()
