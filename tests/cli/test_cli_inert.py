"""Terminal text is inert: what a model, a tool, a grader or a stored run wrote reaches the terminal with
its escape sequences shown, never obeyed. ``inert`` on each kind of sequence; then the real console
script in a real pseudo-terminal, its raw bytes read: no window title (OSC 0), clipboard (OSC 52),
concealed text (SGR 8), cleared screen, 8-bit CSI or bidi override that the run's text carried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.pty_session import PtySession

from machine import SQLiteStore
from machine.cli._table import table_lines
from machine.runs import inert, inert_json
from machine.workspace import tag_run

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

    from machine.runs import Run

# what the model replies: the "$0.50 … Shall I?" that hides $40, a title, the clipboard, a cleared screen,
# an 8-bit CSI and a right-to-left override
REPLY = (
    "costs at most $0.50\x1b[8m (a full training costs $40)\x1b[0m. Shall I?"
    "\x1b]0;pwned-title\x07\x1b]52;c;ZXZpbA==\x1b\\\x1b[2J\x9b31m\u202eevil"
)
# what the tool returns (and a stored run keeps): the clipboard and concealed text
PAGE = "page \x1b]52;c;dG9vbA==\x07 text \x1b[8mhidden\x1b[0m"
# a tag's note, as a host or a paste might have written it
NOTE = "fine\x1b]0;tag-title\x07\x1b[8mconcealed"

HOSTILE_PY = """\
from machine import check, define_evaluator, define_machine, define_rubric, tool

rubric = define_rubric({"short": "The reply is short."})


@tool
def read_page() -> str:
    \"\"\"Read the page.\"\"\"
    return PAGE


def _short(run):
    return (0.0, "too long: " + run.output)  # a reason that quotes the run, as graders' reasons do


machine = define_machine(
    name="hostile",
    intent="Read a page.",
    instructions="Read the page.",
    model="Qwen/Qwen3.8-27B",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"short": check("short", _short)}),
    tools=[read_page],
)
""".replace("PAGE", json.dumps(PAGE))

SCRIPT = {
    "rules": [
        {
            "match": "page",
            "turns": [{"tool_calls": [{"name": "read_page", "arguments": {}}]}, {"text": REPLY}],
        }
    ]
}

RAW = (b"\x1b]0;", b"\x1b]52;", b"\x1b[8m", b"\x1b[2J", "\x9b".encode(), "\u202e".encode())
"""What must never reach the terminal raw: the run's sequences (the program's own colours may)."""


# --- inert, each kind of sequence ---


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b[8mhidden\x1b[0m b", "a␛[8mhidden␛[0m b"),  # SGR conceal
        ("\x1b]0;title\x07", "␛]0;title\\x07"),  # OSC 0, ended by BEL
        ("\x1b]0;title\x1b\\", "␛]0;title␛\\"),  # OSC 0, ended by ST
        ("\x1b]52;c;ZXZpbA==\x07", "␛]52;c;ZXZpbA==\\x07"),  # OSC 52 clipboard
        ("\x1b[2J\x1b[H\x1b[3A\x1b[?25l", "␛[2J␛[H␛[3A␛[?25l"),  # CSI: clear, home, up, hide cursor
        ("\x9b8m\x9d0;t\x9c", "\\x9b8m\\x9d0;t\\x9c"),  # 8-bit CSI, OSC and ST (C1)
        ("a\x00b\x7fc\x08d\x0be\x0cf", "a\\x00b\\x7fc\\x08d\\x0be\\x0cf"),  # NUL, DEL, BS, VT, FF
        ("$5\rrm -rf", "$5\\x0drm -rf"),  # a lone carriage return would overwrite the line
        ("one\r\ntwo", "one\ntwo"),  # CRLF is a newline: it overwrites nothing
        ("x\u202ey\u202a\u2066z\u2069", "x\\u202ey\\u202a\\u2066z\\u2069"),  # bidi override, isolates
    ],
)
def test_inert_shows_each_control(text: str, shown: str) -> None:
    assert inert(text) == shown


def test_inert_keeps_newline_tab_and_ordinary_unicode() -> None:
    text = "line one\n\tindented — ünïcödé 日本語 ✓ 🙂 a\u200db ﷺ\n"
    assert inert(text) is text


def test_inert_leaves_no_control_in_any_text() -> None:
    every = "".join(chr(code) for code in range(0x2100))
    shown = inert(every)
    left = {ch for ch in shown if ch not in "\n\t" and (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0)}
    assert not left and "\u202e" not in shown and inert(shown) == shown


def test_inert_json_is_the_same_json_and_inert() -> None:
    value = {"reply": REPLY + "\x7f", "tool": PAGE}
    text = inert_json(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert not any(ch in text for ch in "\x1b\x9b\x7f\u202e") and "\\u009b" in text and "\\u202e" in text


def test_table_cells_are_inert_and_read_as_no_markup() -> None:
    lines = table_lines(("id", "note"), [("r1", "[bold]loud[/bold] [red"), ("r2", NOTE)])
    assert "[bold]loud[/bold] [red" in lines[1]
    assert "\x1b" not in "".join(lines) and "␛]0;tag-title\\x07␛[8mconcealed" in lines[2]


# --- the console script in a real terminal ---


@pytest.fixture
def hostile(ws: WorkspaceFolder) -> WorkspaceFolder:
    ws.write("machines/hostile/machine.py", HOSTILE_PY)
    ws.write_json("machines/hostile/cases.json", [{"id": "p1", "input": "read the page"}])
    ws.write_json("hostile.json", SCRIPT)
    return ws


def terminal(
    ws: WorkspaceFolder, *args: str | Path, scripted: bool = True, typed: str = "", status: int = 0
) -> str:
    """What ``machine ARGS`` sent a real terminal (``typed`` typed into it), every byte, checked for the
    run's raw sequences."""
    harness = ["--harness", "scripted", "--script", str(ws.root / "hostile.json")] if scripted else []
    argv = [str(MACHINE_BIN), *map(str, args), *harness, "--workspace", str(ws.root)]
    session = PtySession(argv, env=clean_env(), cwd=ws.root)
    for line in typed.splitlines():
        session.expect("you> ")
        session.send(line)
    ended = session.close()
    shown = session.raw.decode("utf-8", "replace")
    assert ended == status, shown
    for raw in RAW:
        assert raw not in session.raw, f"{raw!r} reached the terminal raw:\n{shown}"
    return shown


def test_run_shows_the_reply_and_the_tool_result_inert(hostile: WorkspaceFolder) -> None:
    shown = terminal(hostile, "run", "hostile", "read the page")
    assert "costs at most $0.50␛[8m (a full training costs $40)␛[0m. Shall I?" in shown  # the reply
    assert "␛]0;pwned-title\\x07␛]52;c;ZXZpbA==␛\\␛[2J\\x9b31m\\u202eevil" in shown
    assert "page ␛]52;c;dG9vbA==\\x07 text ␛[8mhidden␛[0m" in shown  # the tool's result, in the steps


def test_the_chat_shows_the_reply_and_the_tool_result_inert(hostile: WorkspaceFolder) -> None:
    shown = terminal(hostile, "run", "hostile", typed="read the page\n/quit")
    assert "costs at most $0.50␛[8m (a full training costs $40)␛[0m. Shall I?" in shown
    assert "page ␛]52;c;dG9vbA==\\x07 text ␛[8mhidden␛[0m" in shown


def stored_run(hostile: WorkspaceFolder, machine_cmd: Command) -> Run:
    """The one run of ``hostile`` made and stored by the console script."""
    made = machine_cmd(
        "run", "hostile", "read the page", "--harness", "scripted", "--script", hostile.root / "hostile.json",
        "--workspace", hostile.root, cwd=hostile.root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    (run,) = hostile.runs("hostile")
    return run


def test_show_run_shows_a_stored_run_inert(hostile: WorkspaceFolder, machine_cmd: Command) -> None:
    run = stored_run(hostile, machine_cmd)
    shown = terminal(hostile, "show-run", run.id, scripted=False)
    assert "␛[8m (a full training costs $40)␛[0m" in shown and "␛]0;pwned-title\\x07" in shown
    assert "page ␛]52;c;dG9vbA==\\x07 text ␛[8mhidden␛[0m" in shown


def test_json_output_keeps_no_c1_or_bidi_raw(hostile: WorkspaceFolder, machine_cmd: Command) -> None:
    made = machine_cmd(
        "run", "hostile", "read the page", "--json", "--harness", "scripted", "--script",
        hostile.root / "hostile.json", "--workspace", hostile.root, cwd=hostile.root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["output"] == REPLY  # the same JSON to a parser
    assert not any(ch in made.stdout for ch in "\x1b\x9b\u202e")
    assert "\\u009b31m\\u202eevil" in made.stdout


def test_tagged_shows_a_note_inert(hostile: WorkspaceFolder, machine_cmd: Command) -> None:
    run = stored_run(hostile, machine_cmd)
    store = SQLiteStore(hostile.db)
    try:
        tag_run(store, run, "bad", NOTE)
    finally:
        store.close()
    shown = terminal(hostile, "tagged", scripted=False)
    assert "bad: fine␛]0;tag-title\\x07␛[8mconcealed" in shown and run.id in shown


def test_suite_verbose_shows_a_graders_reason_inert(hostile: WorkspaceFolder) -> None:
    shown = terminal(hostile, "suite", "hostile", "-v")
    assert "short: 0.00 — too long: costs at most $0.50␛[8m (a full training costs $40)␛[0m" in shown
    assert "␛]0;pwned-title\\x07" in shown


def test_show_shows_a_machines_words_inert(hostile: WorkspaceFolder) -> None:
    hostile.write(
        "machines/hostile/machine.py",
        HOSTILE_PY.replace('"Read a page."', json.dumps("Read a page.\x1b]0;intent-title\x07\u202e")),
    )
    shown = terminal(hostile, "show", "hostile", scripted=False)
    assert "intent: Read a page.␛]0;intent-title\\x07\\u202e" in shown


def test_trust_shows_model_written_code_inert(hostile: WorkspaceFolder) -> None:
    code = 'TITLE = "\x1b]0;code-title\x07"  # \x1b[8mhidden\x1b[0m\rharmless\nOK = "\u202e1"\n'
    hostile.write_as_model("hostile/child", {"machine.py": code}, by="a model")
    shown = terminal(hostile, "trust", "hostile/child", scripted=False, status=2)  # refused: it hides text
    assert '+TITLE = "␛]0;code-title\\x07"  # ␛[8mhidden␛[0m' in shown
    assert "\n+harmless" in shown.replace("\x1b[32m", "")  # a carriage return ends a line of Python, as shown
    assert '+OK = "\\u202e1"' in shown
