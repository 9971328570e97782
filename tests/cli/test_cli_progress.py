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

MACHINE_BIN = Path(sys.executable).parent / "machine"
REPO = Path(__file__).resolve().parents[2]
SGR = re.compile(r"\x1b\[[0-9;]*m")
LIMIT_S = 60.0


def in_a_terminal(*args: str, env: dict[str, str]) -> str:
    """What the command wrote to a pseudo-terminal (stdout and stderr both), read until it exits."""
    leader, follower = os.openpty()
    done = subprocess.Popen(
        [str(MACHINE_BIN), *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=REPO,
    )
    os.close(follower)
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


def workspace(tmp_path: Path) -> None:
    shutil.copytree(
        REPO / "machines" / "red", tmp_path / "machines" / "red", ignore=shutil.ignore_patterns("__pycache__")
    )


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
