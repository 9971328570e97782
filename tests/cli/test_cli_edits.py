"""Changes to a person's own project, asked about at their terminal: a scripted dev machine run in a
temporary git project, in a real pseudo-terminal. Each change is shown as a diff (escape sequences in a
proposed file shown inert) and made only after a yes; a no leaves the file byte for byte and the model is
told; "all" makes the rest of the turn's changes unasked; "quit" stops the run; ``--edits deny`` and a
run without a terminal change nothing; the run's trajectory keeps every decision."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from helpers.dev_project import HOSTILE, ORIGINAL, setup
from helpers.env import MACHINE_BIN, clean_env
from helpers.pty_session import PtySession

from machine.runs import SQLiteStore


def argv(ws: Path, script: Path, *more: str, task: str = "change it") -> list[str]:
    return [str(MACHINE_BIN), "run", "dev", task, "--harness", "scripted", "--script", str(script),
            "--workspace", str(ws), *more]  # fmt: skip


def tool_results(ws: Path) -> list[Any]:
    """The newest run's tool results, each with its edits."""
    store = SQLiteStore.in_workspace(ws)
    [run] = store.runs("dev", 1)
    store.close()
    return [m for m in run.trajectory if m.role == "tool"]


def answering(ws: Path, script: Path, project: Path, *answers: str) -> PtySession:
    session = PtySession(argv(ws, script), env=clean_env(), cwd=project)
    for answer in answers:
        session.expect("Apply it?")
        session.send(answer)
    return session


def test_a_declined_change_leaves_the_file_and_the_model_is_told(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = answering(ws, script, project, "n", "n", "n")
    assert session.close() == 0, session.seen[-2000:]
    assert (project / "app.py").read_bytes() == ORIGINAL.encode()
    assert not (project / "notes").exists() and not (project / "shown.txt").exists()
    results = tool_results(ws)
    assert [r.content for r in results] == ["the person declined this change; nothing was written"] * 3
    assert all(r.is_error for r in results)
    assert [(e.tool, e.path, e.decision, e.by) for r in results for e in r.edits] == [
        ("edit_file", "app.py", "declined", "terminal"),
        ("write_file", "notes/new.txt", "declined", "terminal"),
        ("write_file", "shown.txt", "declined", "terminal"),
    ]


def test_an_approved_change_is_exactly_the_diff_shown(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = PtySession(argv(ws, script), env=clean_env(), cwd=project)
    shown = session.expect("Apply it?")
    assert "The machine wants to change app.py:" in shown
    assert "--- a/app.py\n  +++ b/app.py\n" in shown
    assert "-    return 'hi'\n  +    return 'hello'" in shown
    session.send("y")
    new = session.expect("Apply it?")
    assert (
        "The machine wants to create notes/new.txt:" in new
        and "--- /dev/null" in new
        and "+a new file" in new
    )
    session.send("y")
    hostile = session.expect("Apply it?")
    session.send("n")
    assert session.close() == 0
    assert (project / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert (project / "notes" / "new.txt").read_text() == "a new file\n"
    assert "+␛]0;owned\\x07␛[2Jcleared" in hostile  # shown as the characters it holds
    assert b"\x1b]0;owned" not in session.raw and b"\x1b[2J" not in session.raw
    decided = [(e.decision, e.by) for r in tool_results(ws) for e in r.edits]
    assert decided == [("approved", "terminal"), ("approved", "terminal"), ("declined", "terminal")]
    assert "+    return 'hello'" in tool_results(ws)[0].edits[0].diff
    store = SQLiteStore.in_workspace(ws)
    [run] = store.runs("dev", 1)
    store.close()
    shown = subprocess.run(
        [str(MACHINE_BIN), "show-run", run.id, "--workspace", str(ws)],
        capture_output=True, text=True, timeout=60, env=clean_env(), check=True,
    ).stdout  # fmt: skip
    assert "    change to app.py approved (terminal, " in shown
    assert "    change to shown.txt declined (terminal, " in shown


def test_all_applies_the_rest_of_the_turn_unasked(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = answering(ws, script, project, "a")
    assert session.close() == 0
    assert session.seen.count("Apply it?") == 1
    assert (project / "shown.txt").read_text() == HOSTILE
    assert [e.by for r in tool_results(ws) for e in r.edits] == ["terminal", "all", "all"]


def test_quit_stops_the_run_and_writes_nothing_more(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = answering(ws, script, project, "y", "q")
    assert session.close() == 0
    assert (project / "app.py").read_text().endswith("'hello'\n")
    assert not (project / "notes").exists() and not (project / "shown.txt").exists()
    store = SQLiteStore.in_workspace(ws)
    [run] = store.runs("dev", 1)
    store.close()
    assert run.stop_reason == "stopped"
    assert [m.content for m in run.trajectory if m.role == "tool"][-1].startswith(
        "the person stopped the run"
    )


def test_deny_and_a_run_without_a_terminal_change_nothing(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    for more in (["--edits", "deny"], []):
        done = subprocess.run(
            argv(ws, script, *more), cwd=project, env=clean_env(), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "every change is refused" in done.stderr
        assert (project / "app.py").read_bytes() == ORIGINAL.encode()
        assert sorted(p.name for p in project.iterdir()) == [".git", "app.py"]
        assert {e.by for r in tool_results(ws) for e in r.edits} == {"policy"}
    refused = subprocess.run(
        argv(ws, script, "--edits", "ask"), cwd=project, env=clean_env(), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert refused.returncode != 0 and "--edits ask needs a terminal" in refused.stderr
    auto = subprocess.run(
        argv(ws, script, "--edits", "auto"), cwd=project, env=clean_env(), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert auto.returncode == 0 and (project / "shown.txt").read_text() == HOSTILE
    assert all(not r.edits for r in tool_results(ws))  # nothing asked, nothing kept


def test_a_command_is_shown_and_asked_about_too(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = PtySession(argv(ws, script, task="run a command"), env=clean_env(), cwd=project)
    asked = session.expect("Apply it?")
    assert "The machine wants to run a command in your project:" in asked and "$ touch made.txt" in asked
    session.send("n")
    session.expect("Apply it?")
    session.send("y")
    assert session.close() == 0
    assert not (project / "made.txt").exists() and (project / "b.txt").read_text() == "b"
    again = PtySession(argv(ws, script, task="run a command"), env=clean_env(), cwd=project)
    again.expect("Apply it?")
    again.send("y")
    again.expect("Apply it?")
    again.send("y")
    assert again.close() == 0 and (project / "made.txt").exists()
    [command] = [e for r in tool_results(ws) for e in r.edits if e.tool == "run"]
    assert (command.command, command.decision) == ("touch made.txt", "approved")


def test_ctrl_c_while_asked_writes_nothing_more(tmp_path: Path) -> None:
    ws, script, project = setup(tmp_path)
    session = PtySession(argv(ws, script), env=clean_env(), cwd=project)
    session.expect("Apply it?")
    session.interrupt()
    assert session.close() != 0
    assert (project / "app.py").read_bytes() == ORIGINAL.encode()
    assert sorted(p.name for p in project.iterdir()) == [".git", "app.py"]
