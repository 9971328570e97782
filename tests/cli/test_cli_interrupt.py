"""Stopping the real ``machine`` command from outside: one Ctrl-C (SIGINT) stops a suite on any harness, keeps
what finished and says how to continue; in a chat it cancels only the reply; a reader that goes away
(``| head``) ends the command quietly."""

from __future__ import annotations

import itertools
import json
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.openai_server import FakeOpenAI, hang, text
from helpers.stopping import NOISE, STOP_S, WAIT_S, Started, interruptible, start

from machine import SQLiteStore
from machine.runs import EVENTS_FILE, Run, Timings

if TYPE_CHECKING:
    from conftest import WorkspaceFolder


def stored(db: Path) -> int:
    """Runs in the store, read without writing anything (0 before the command has made it)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5.0) as connection:
            (count,) = connection.execute("SELECT count(*) FROM runs").fetchone()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    return int(count)


def wait_until_stored(started: Started, db: Path) -> None:
    """Poll the store (bounded in time) until the command has stored its first run."""
    deadline = time.monotonic() + WAIT_S
    while stored(db) == 0:
        assert started.process.poll() is None, ("ended before storing a run", started.err.read_text())
        assert time.monotonic() < deadline, "no run was stored in time"
        time.sleep(0.01)
    assert started.process.poll() is None, "the command finished before it could be interrupted"


def suite_runs(db: Path, suite_id: str) -> list[Any]:
    store = SQLiteStore(db)
    try:
        return list(store.iter_suite_runs(suite_id))
    finally:
        store.close()


def continue_line(err: str) -> list[str]:
    """The command the stopped suite printed to continue it, ready to run."""
    [line] = [line for line in err.splitlines() if line.startswith("continue it with: ")]
    words = shlex.split(line.removeprefix("continue it with: "))
    assert words[0] == "machine"
    return [str(MACHINE_BIN), *words[1:]]


def many_cases(ws: WorkspaceFolder, count: int) -> None:
    ws.write_json("machines/plain/cases.json", [{"id": f"c{i}", "input": f"hi {i}"} for i in range(count)])


SLOW_SCRIPT = {"rules": [{"match": ".", "turns": [{"text": "hello", "delay": 0.02}]}]}
"""A model that takes 20 ms a reply."""
FAST_SCRIPT = {"rules": [{"match": ".", "turns": [{"text": "hello"}]}]}
"""A model that answers at once: the suite never waits on anything but the store."""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("harness", "script", "cases"),
    [("echo", None, 2000), ("scripted", FAST_SCRIPT, 2000), ("scripted", SLOW_SCRIPT, 400)],
    ids=["echo", "scripted", "scripted-slow"],
)
def test_one_ctrl_c_stops_a_suite_keeps_what_finished_and_resume_finishes_it(
    ws: WorkspaceFolder, tmp_path: Path, harness: str, script: Any, cases: int
) -> None:
    many_cases(ws, cases)
    options = ["--harness", harness, "--concurrency", "4", "--workspace", ws.root]
    if script is not None:
        options += ["--script", ws.write_json("slow.json", script)]
    started = start(tmp_path, "suite", "plain", *options)
    wait_until_stored(started, ws.db)
    status, took, out, err = started.stopped()

    assert status == 130, (out, err)
    assert took < STOP_S, f"took {took:.1f}s to stop"
    assert not any(noise in out + err for noise in NOISE), err
    [note] = [line for line in err.splitlines() if line.startswith("interrupted: suite ")]
    suite_id = note.split()[2]
    finished = int(note.split(" stopped after ")[1].split()[0])
    assert f"of {cases} runs; the finished runs are stored" in note
    assert "spent $0.0000 of budget $1.00" in err
    resume = continue_line(err)
    assert resume[-2:] == ["--resume", suite_id]
    kept = suite_runs(ws.db, suite_id)
    assert 0 < len(kept) == finished < cases  # every run it counted as finished is in the store
    assert len({r.case_id for r in kept}) == len(kept)
    assert not any((ws.root / ".machine" / "sandboxes").glob("*"))  # no run's folder left behind
    log = (ws.root / ".machine" / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    told = {e["run"] for e in map(json.loads, log) if e["kind"] == "run_finished"}
    assert {r.id for r in kept} <= told  # the event log's last window written as the command ended

    done = subprocess.run(
        resume, capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=WAIT_S * 2, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"resuming suite {suite_id}: {finished} pairs done, {cases - finished} to run" in done.stderr
    assert f"plain: {cases} runs, mean 1.00" in done.stdout
    runs = suite_runs(ws.db, suite_id)
    assert sorted(r.case_id for r in runs) == sorted(f"c{i}" for i in range(cases))  # each case once


def test_the_resume_command_repeats_the_options_given(ws: WorkspaceFolder, tmp_path: Path) -> None:
    many_cases(ws, 2000)
    started = start(
        tmp_path, "--workspace", ws.root, "suite", "plain", "--harness", "echo", "--pass-score", "0.5",
        "--budget", "0.25", "-v",
    )  # fmt: skip
    wait_until_stored(started, ws.db)
    status, _, out, err = started.stopped()
    assert status == 130, err
    words = continue_line(err)[1:]
    assert words[:2] == ["suite", "plain"]
    pairs = set(itertools.pairwise(words))
    assert {("--harness", "echo"), ("--pass-score", "0.5"), ("--budget", "0.25")} <= pairs
    assert ("--workspace", str(ws.root)) in pairs and "--verbose" in words
    assert words.count("--resume") == 1
    assert "spent $0.0000 of budget $0.25" in err
    assert out.count("\n") >= 1 and "[1/2000] case c0 trial 0: 1.00 pass" in out


TALKER_PY = """\
from machine import Counterpart, check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({"said": "Says something."})
evaluator = define_evaluator(rubric, {"said": check("said", lambda run: bool(run.output))})

asker = define_machine(
    name="asker", intent="Ask.", instructions="Ask.", model="echo", rubric=rubric, evaluator=evaluator
)
machine = define_machine(
    name="talker",
    intent="Answer.",
    instructions="Answer.",
    model="echo",
    rubric=rubric,
    evaluator=evaluator,
    counterpart=Counterpart(machine=asker, max_turns=200),
)
"""


def test_ctrl_c_ends_a_conversation_with_its_turns_stored(ws: WorkspaceFolder, tmp_path: Path) -> None:
    ws.write("machines/talker/machine.py", TALKER_PY)
    ws.write_json("machines/talker/cases.json", [{"id": "one", "input": "start"}])
    script = ws.write_json("slow.json", SLOW_SCRIPT)
    started = start(
        tmp_path, "converse", "talker", "--harness", "scripted", "--script", script, "--workspace", ws.root
    )
    wait_until_stored(started, ws.db)
    status, took, out, err = started.stopped()
    assert status == 130, err
    assert took < STOP_S
    assert not any(noise in out + err for noise in NOISE), err
    [note] = [line for line in err.splitlines() if line.startswith("interrupted: conversation ")]
    turns = int(note.split(" stopped after ")[1].split()[0])
    assert 0 < turns < 200 and note.endswith("which are stored")
    assert stored(ws.db) == turns
    assert "spent $0.0000" in err


def test_ctrl_c_during_a_chat_reply_cancels_only_that_reply(ws: WorkspaceFolder, tmp_path: Path) -> None:
    with FakeOpenAI([hang(5.0), text("hello again", prompt_tokens=10)]) as server:
        chat = subprocess.Popen(
            [str(MACHINE_BIN), "run", "greet", "--harness", "openai", "--base-url", server.url + "/v1",
             "--workspace", str(ws.root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=clean_env(), cwd=tmp_path, preexec_fn=interruptible,
        )  # fmt: skip
        try:
            assert chat.stdin is not None and chat.stderr is not None
            chat.stdin.write("hello\n")
            chat.stdin.flush()
            deadline = time.monotonic() + WAIT_S
            while not server.requests:  # the reply is under way: the endpoint holds it
                assert chat.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
            sent = time.monotonic()
            chat.send_signal(signal.SIGINT)
            assert chat.stderr.readline().startswith("greet's tools work on the real files of ")  # said once
            assert chat.stderr.readline() == "cancelled; the conversation goes on from before it\n"
            assert time.monotonic() - sent < STOP_S
            out, err = chat.communicate("and again\n/quit\n", timeout=WAIT_S)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait()
    assert chat.returncode == 0, err
    assert "hello again" in out
    assert not any(noise in out + err for noise in NOISE), err
    assert "spent $0.0000" in err and "of budget $1.00" in err
    assert [r.messages[-1]["content"] for r in server.requests] == ["hello", "and again"]
    assert (
        len(server.requests[1].messages) == 2
    )  # instructions and the new message: nothing of the cancelled one
    assert stored(ws.db) == 1  # the cancelled reply left no run


def read_one_line_then_close(args: list[str | Path], cwd: Path) -> tuple[int, str, str]:
    """``machine ARGS | head -1``: read one line of stdout, close the pipe, and let the command go on."""
    process = subprocess.Popen(
        [str(MACHINE_BIN), *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
        cwd=cwd,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline().decode()
        process.stdout.close()
        err = process.stderr.read().decode()
        status = process.wait(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return status, first, err


def test_a_closed_pipe_ends_a_suite_and_a_listing_quietly(ws: WorkspaceFolder, tmp_path: Path) -> None:
    many_cases(ws, 2000)
    status, first, err = read_one_line_then_close(
        ["suite", "plain", "--harness", "echo", "-v", "--workspace", ws.root], tmp_path
    )
    assert first == "[1/2000] case c0 trial 0: 1.00 pass\n"
    assert status == 141, err
    assert not any(noise in err for noise in NOISE), err
    [note] = [line for line in err.splitlines() if line.startswith("output closed: suite ")]
    assert "spent $0.0000" in err and "--resume" in continue_line(err)
    assert 0 < stored(ws.db) < 2000
    assert " of plain stopped after " in note


def test_a_closed_pipe_ends_a_listing_quietly(ws: WorkspaceFolder, tmp_path: Path) -> None:
    store = SQLiteStore(ws.db)  # more runs than a pipe holds, whatever a suite would have stored by now
    store.put_many(
        [
            Run(
                id=f"r{i:05d}",
                machine="plain",
                model="echo",
                harness="echo",
                input=f"hi {i}",
                output="hello",
                case_id=f"c{i}",
                trial=0,
                timings=Timings(),
            )
            for i in range(3000)
        ]
    )
    store.close()
    status, first, err = read_one_line_then_close(
        ["runs", "plain", "--limit", "2000", "--workspace", ws.root], tmp_path
    )
    assert " ".join(first.split()) == "id started score cost model case tags input, or why it failed"
    assert (status, err) == (141, "")  # a line at a time: the write after the reader left is refused
    # One large write: the interpreter may keep what the pipe refused; it must not complain at exit either.
    status, first, err = read_one_line_then_close(
        ["runs", "plain", "--limit", "2000", "--json", "--workspace", ws.root], tmp_path
    )
    assert first == "[\n"
    assert status in (0, 141) and err == ""


@pytest.mark.slow
def test_ctrl_c_in_a_family_suite_names_the_member_suite_to_continue(
    ws: WorkspaceFolder, tmp_path: Path
) -> None:
    script = ws.write_json(
        "slow.json", {"rules": [{"match": ".", "turns": [{"text": "hello", "delay": 0.05}]}]}
    )
    started = start(
        tmp_path, "suite", "greet", "--tree", "--trials", "100", "--harness", "scripted", "--script", script,
        "--workspace", ws.root,
    )  # fmt: skip
    wait_until_stored(started, ws.db)
    status, _, out, err = started.stopped()
    assert status == 130, err
    assert not any(noise in out + err for noise in NOISE), err
    [note] = [line for line in err.splitlines() if line.startswith("interrupted: suite ")]
    assert " of greet stopped after " in note and note.split()[2] in continue_line(err)
    resume = continue_line(err)
    assert "--tree" not in resume and resume[1:3] == ["suite", "greet"]
    done = subprocess.run(
        resume, capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=WAIT_S * 2, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "greet: 300 runs" in done.stdout
