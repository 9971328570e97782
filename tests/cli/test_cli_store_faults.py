"""The store never lies and never loses finished work, through the real ``machine`` command: a damaged store
is refused untouched, a full disk keeps what was written and names what was not, finished runs reach the
store while the suite still runs, and ``--resume`` clears the sandboxes a killed suite left."""

from __future__ import annotations

import hashlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.cli_workspace import write_workspace
from helpers.env import MACHINE_BIN, clean_env
from helpers.filesystems import small_tmpfs

if TYPE_CHECKING:
    from conftest import Command, WorkspaceFolder

PAGE = 8192
WAIT_S = 30.0

HOLD_PY = """\
from pathlib import Path

import anyio

from machine import check, define_evaluator, define_machine, define_rubric, tool

RELEASE = Path(__file__).resolve().parent / "release"


@tool
async def hold() -> str:
    \"\"\"Wait until the test lets this run finish (20 s at most).\"\"\"
    for _ in range(400):
        if RELEASE.exists():
            return "released"
        await anyio.sleep(0.05)
    return "gave up"


rubric = define_rubric({"nonempty": "The reply is not empty."})

machine = define_machine(
    name="holder",
    intent="Reply, and for the slow case wait to be let go first.",
    instructions="Reply.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"nonempty": check("nonempty", lambda run: bool(run.output))}),
    tools=[hold],
)
"""
HOLD_SCRIPT = {
    "rules": [
        {"match": "slow", "turns": [{"tool_calls": [{"name": "hold", "arguments": {}}]}, {"text": "done"}]},
        {"match": ".", "turns": [{"text": "quick"}]},
    ]
}
HOLD_CASES = [{"id": "slow", "input": "slow"}] + [{"id": f"q{i}", "input": f"quick {i}"} for i in range(5)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def stored_ids(db: Path) -> set[str]:
    """The run ids in the store, read without writing (the disk may be full)."""
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in reader.execute("SELECT id FROM runs")}
    finally:
        reader.close()


def stored_count(db: Path) -> int:
    try:
        return len(stored_ids(db))
    except sqlite3.Error:  # not made yet
        return 0


def holder_workspace(ws: WorkspaceFolder) -> Path:
    ws.write("machines/holder/machine.py", HOLD_PY)
    ws.write_json("machines/holder/cases.json", HOLD_CASES)
    return ws.write_json("hold.json", HOLD_SCRIPT)


def start_holder(ws: WorkspaceFolder, script: Path, *extra: str) -> subprocess.Popen[str]:
    args = [str(MACHINE_BIN), "suite", "holder", "--harness", "scripted", "--script", str(script)]
    return subprocess.Popen(
        [*args, "--concurrency", "6", "--workspace", str(ws.root), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_a_damaged_store_is_refused_with_what_to_do_and_left_untouched(
    ws: WorkspaceFolder, machine_cmd: Command
) -> None:
    seeded = machine_cmd(
        "suite",
        "greet",
        "--trials",
        "40",
        "--harness",
        "scripted",
        "--script",
        ws.script,
        "--workspace",
        ws.root,
    )
    assert seeded.returncode == 0, seeded.stderr
    assert not Path(f"{ws.db}-wal").exists() or Path(f"{ws.db}-wal").stat().st_size == 0
    pages = ws.db.stat().st_size // PAGE
    assert pages > 20
    noise = random.Random(5)
    with ws.db.open("r+b") as file:  # pages in the middle overwritten, as a failing disk leaves them
        for page in range(pages // 2 - 2, pages // 2 + 2):
            file.seek(page * PAGE)
            file.write(noise.randbytes(PAGE))
    before = sha256(ws.db)
    for command in (
        ("suite", "greet", "--harness", "scripted", "--script", ws.script),
        ("run", "plain", "hi", "--harness", "echo"),
    ):
        result = machine_cmd(*command, "--workspace", ws.root)
        assert result.returncode == 2, (command, result.stderr)
        assert "Traceback" not in result.stderr
        [line] = error_lines(result.stderr)
        assert (
            f"the store {ws.db} is damaged" in line and ".recover" in line and "nothing was written" in line
        )
    assert sha256(ws.db) == before


PAID_SCRIPT = {"rules": [{"match": ".", "turns": [{"text": "paid", "usage": {"input_tokens": 100}}]}]}
"""Each run costs a little (100 input tokens at Qwen3.8-27B's price), so the spending log is written too."""


@pytest.mark.parametrize("paid", [False, True], ids=["free", "paid"])
def test_a_suite_that_fills_the_disk_keeps_what_it_wrote_and_names_what_it_lost(
    tmp_path: Path, machine_cmd: Command, paid: bool
) -> None:
    with small_tmpfs(tmp_path / "small", 1200) as mounted:
        ws = write_workspace(mounted / "ws")
        cases = [{"id": f"c{i}", "input": f"{i} " + "x" * 4000} for i in range(60)]
        ws.write_json("machines/plain/cases.json", cases)
        harness = ["--harness", "echo"]
        if paid:
            script = ws.write_json("paid.json", PAID_SCRIPT)
            harness = ["--harness", "scripted", "--script", str(script), "--model", "Qwen/Qwen3.8-27B"]
        result = machine_cmd("suite", "plain", *harness, "--workspace", ws.root)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        [line] = error_lines(result.stderr)
        # The first failure leads; a later one (the spending log on the same full disk) only follows it.
        assert line.startswith(f"error: the store {ws.db} could not be written: the disk is full")
        lines = result.stderr.splitlines()
        [spend] = [
            text for text in lines[: lines.index(line)] if text.startswith("spent $")
        ]  # the spend, first
        assert ("spent $0.0000 " in spend) is not paid
        if paid:  # settling the spend failed on the full disk too, and is said after the first failure
            assert line.index("the disk is full") < line.index("could not write the spending log")
        assert "plain: 60 runs" in result.stdout  # the report of what finished
        kept = stored_ids(ws.db)
        listing = line.split(" are lost: ")[1].split("; ")[0]
        lost = set(re.findall(r"(\S+) \(case c\d+, trial 0\)", listing))
        assert kept and lost and not kept & lost
        assert len(kept) + len(lost) == 60
        assert f"{len(lost)} finished runs could not be stored" in line
        assert "--resume" in line
        # With room again, --resume runs exactly the lost pairs and the suite is whole.
        grown = subprocess.run(["mount", "-o", "remount,size=16m", str(mounted)], check=False, timeout=30)
        assert grown.returncode == 0
        resumed = machine_cmd("suite", "plain", *harness, "--resume", "--workspace", ws.root)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{len(kept)} pairs done, {len(lost)} to run" in resumed.stderr
        assert len(stored_ids(ws.db)) == 60


@pytest.mark.slow
def test_finished_runs_reach_the_store_while_the_suite_still_runs(ws: WorkspaceFolder) -> None:
    script = holder_workspace(ws)
    suite = start_holder(ws, script)
    try:
        wait_for(lambda: stored_count(ws.db) >= 5 or suite.poll() is not None, "the quick runs in the store")
        assert suite.poll() is None, suite.communicate()  # still running: the slow case is held
        assert stored_count(ws.db) == 5
        (ws.machines / "holder" / "release").touch()
        _out, err = suite.communicate(timeout=WAIT_S)
    finally:
        if suite.poll() is None:
            suite.kill()
            suite.communicate()
    assert suite.returncode == 0, err
    assert stored_count(ws.db) == 6


@pytest.mark.slow
def test_resume_clears_the_sandboxes_of_a_killed_suite(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    script = holder_workspace(ws)
    sandboxes = ws.root / ".machine" / "sandboxes"

    def run_folders() -> list[Path]:
        found = [path for path in sandboxes.rglob("*") if path.is_dir()] if sandboxes.exists() else []
        return [path for path in found if not any(inner.is_dir() for inner in path.iterdir())]

    suite = start_holder(ws, script)
    try:
        wait_for(lambda: stored_count(ws.db) >= 5 and run_folders(), "the slow run to hold in its sandbox")
        os.kill(suite.pid, signal.SIGKILL)  # no cleanup can run
        suite.communicate(timeout=WAIT_S)
    finally:
        if suite.poll() is None:
            suite.kill()
            suite.communicate()
    left = run_folders()
    assert left, "a killed suite leaves its running run's sandbox behind"
    (ws.machines / "holder" / "release").touch()
    resumed = machine_cmd(
        "suite", "holder", "--harness", "scripted", "--script", script, "--resume", "--workspace", ws.root
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "5 pairs done, 1 to run" in resumed.stderr
    assert not any(path.exists() for path in left)
    assert not list(sandboxes.iterdir())
    assert stored_count(ws.db) == 6


@pytest.mark.slow
def test_resume_refuses_a_suite_that_is_still_running(ws: WorkspaceFolder, machine_cmd: Command) -> None:
    script = holder_workspace(ws)
    suite = start_holder(ws, script)
    try:
        wait_for(lambda: stored_count(ws.db) >= 5, "the quick runs in the store")
        again = machine_cmd(
            "suite", "holder", "--harness", "scripted", "--script", script, "--resume", "--workspace", ws.root
        )
        assert again.returncode == 2, again.stderr
        [line] = error_lines(again.stderr)
        assert "is running in another process" in line
        assert suite.poll() is None  # its sandboxes were left alone
        (ws.machines / "holder" / "release").touch()
        suite.communicate(timeout=WAIT_S)
    finally:
        if suite.poll() is None:
            suite.kill()
            suite.communicate()
    assert suite.returncode == 0
    assert stored_count(ws.db) == 6
