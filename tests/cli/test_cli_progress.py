"""Progress on a terminal: ``suite`` shows rich's bar (count, rate, time left, the last run) on stderr
when it is a terminal (a real pseudo-terminal here), nothing of it in a pipe, and no colour at all
under ``NO_COLOR``."""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

if TYPE_CHECKING:
    from machine.workspace import Workspace

MACHINE_BIN = Path(sys.executable).parent / "machine"
REPO = Path(__file__).resolve().parents[2]
SGR = re.compile(r"\x1b\[[0-9;]*m")
LIMIT_S = 60.0


def in_a_terminal(*args: str, env: dict[str, str], typed: bytes | None = None) -> str:
    """What the command wrote to a pseudo-terminal (stdout and stderr both), read until it exits;
    ``typed`` is what the person types into it (else its input is empty)."""
    leader, follower = os.openpty()
    done = subprocess.Popen(
        [str(MACHINE_BIN), *args],
        stdin=subprocess.DEVNULL if typed is None else follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=REPO,
    )
    os.close(follower)
    if typed is not None:
        os.write(leader, typed)
    seen, deadline = b"", time.monotonic() + LIMIT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the other side closed: the command has exited
                    break
                if not chunk:
                    break
                seen += chunk
            elif done.poll() is not None:
                break
        assert done.wait(timeout=LIMIT_S) == 0, seen.decode(errors="replace")
    finally:
        os.close(leader)
        if done.poll() is None:
            done.kill()
    return seen.decode(errors="replace")


def suite_args(tmp_path: Path) -> list[str]:
    return [
        "suite", "red", "--trials", "2", "--harness", "scripted", "--script", "machines/red/script.json",
        "--budget", "none", "--workspace", str(tmp_path),
    ]  # fmt: skip


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHINE_") and k != "NO_COLOR"}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "120", **extra}


def workspace(tmp_path: Path, *names: str) -> None:
    for name in names or ("red",):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / "machines" / name, tmp_path / "machines" / name, ignore=ignore)


def scripted(tmp_path: Path, name: str) -> list[str]:
    script = str(tmp_path / "machines" / name / "script.json")
    return ["--harness", "scripted", "--script", script, "--budget", "none", "--workspace", str(tmp_path)]


def test_a_suite_on_a_terminal_shows_the_bar_with_count_rate_and_the_last_run(tmp_path: Path) -> None:
    workspace(tmp_path)
    shown = in_a_terminal(*suite_args(tmp_path), env=clean_env())
    plain = SGR.sub("", shown)
    assert "34/34" in plain and "runs/s" in plain and "last: " in plain
    assert "━" in plain and "[####" not in plain  # rich's bar, not a hand-drawn one
    assert SGR.search(shown)  # in colour on a terminal
    assert "red: 34 runs, mean 1.00" in plain


def test_no_color_leaves_out_every_colour(tmp_path: Path) -> None:
    workspace(tmp_path)
    shown = in_a_terminal(*suite_args(tmp_path), env=clean_env(NO_COLOR="1"))
    assert "34/34" in SGR.sub("", shown) and not SGR.search(shown)


def test_in_a_pipe_there_is_no_bar(tmp_path: Path) -> None:
    workspace(tmp_path)
    done = subprocess.run(
        [str(MACHINE_BIN), *suite_args(tmp_path)], capture_output=True, text=True, env=clean_env(), cwd=REPO,
        timeout=LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "━" not in done.stderr and "runs/s" not in done.stderr and not SGR.search(done.stdout + done.stderr)
    )


def test_compare_on_a_terminal_counts_both_versions_runs_on_one_bar(tmp_path: Path) -> None:
    workspace(tmp_path)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "red"], check=True)
    shown = SGR.sub("", in_a_terminal("compare", "red", *scripted(tmp_path, "red"), env=clean_env()))
    assert "34/34" in shown and "runs/s" in shown and "last: " in shown, shown  # 17 cases, A and B
    assert "comparing red: A = HEAD" in shown


def test_a_chat_shows_that_it_is_thinking_while_the_reply_is_awaited(tmp_path: Path) -> None:
    workspace(tmp_path)
    typed = b"Is the sky red?\n/quit\n"
    shown = SGR.sub("", in_a_terminal("run", "red", *scripted(tmp_path, "red"), env=clean_env(), typed=typed))
    assert "thinking…" in shown, shown
    assert shown.index("thinking…") < shown.index("spent $")


def test_a_conversation_shows_that_it_is_thinking_and_no_spinner_in_a_pipe(tmp_path: Path) -> None:
    workspace(tmp_path, "chatbot", "persona")
    args = ["converse", "chatbot", *scripted(tmp_path, "chatbot")]
    shown = SGR.sub("", in_a_terminal(*args, env=clean_env()))
    assert "thinking…" in shown and "[1] persona" in shown, shown
    piped = subprocess.run(
        [str(MACHINE_BIN), *args], capture_output=True, text=True, env=clean_env(), cwd=REPO, timeout=LIMIT_S
    )
    assert piped.returncode == 0 and "thinking" not in piped.stdout + piped.stderr, piped.stderr


def test_in_a_pipe_a_long_measurement_says_how_far_it_got_now_and_then(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from machine.cli import _progress

    ws = SimpleNamespace(watchers=[])
    run = SimpleNamespace(case_id="c1", machine="red", status="ok", score=0.5)
    monkeypatch.setattr(_progress, "PIPE_EVERY_S", 3600.0)
    with _progress.watching(cast("Workspace", ws), "red: live and candidate"):
        [watch] = ws.watchers
        watch("finished", run)
    assert capsys.readouterr().err == ""  # a short measurement says nothing
    monkeypatch.setattr(_progress, "PIPE_EVERY_S", 0.0)
    with _progress.watching(cast("Workspace", ws), "red: live and candidate"):
        [watch] = ws.watchers
        watch("started", run)
        watch("finished", run)
        watch("finished", run)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "red: live and candidate: 1 run finished, last: c1 0.50",
        "red: live and candidate: 2 runs finished, last: c1 0.50",
    ]
    assert ws.watchers == []
    with _progress.watching(cast("Workspace", ws), "quiet", show=False):
        assert ws.watchers == []  # under --json: nothing watches
