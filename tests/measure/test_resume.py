"""Resumable suites: a suite id on every run, ``resume`` runs only the (case, trial) pairs without a
finished run, old stores gain the column, and a ``machine suite`` killed with SIGKILL is finished by
``machine suite --resume`` in a new process without rerunning what was already stored."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from machine import (
    Case,
    Machine,
    Run,
    SQLiteStore,
    check,
    define_evaluator,
    define_machine,
    define_rubric,
    judge,
    open_workspace,
    run_suite,
)
from machine.cli import cli
from machine.clients.scripted import Script, ScriptedHarness
from machine.errors import BadInputError, NotFoundError
from machine.measure._pool import WRITE_BATCH  # the batch size, tested on purpose

CASES = [
    Case(id="ann", input="greet ann"),
    Case(id="bob", input="greet bob"),
    Case(id="cat", input="greet cat"),
]
REPLIES = {"ann": "hello ann", "bob": "hello bob, what a long and lovely day it is", "cat": "go away"}
SCORES = {"ann": 1.0, "bob": 2.5 / 3, "cat": 1 / 3}
SCRUBBED = (
    "MACHINE_WORKSPACE",
    "MACHINE_HARNESS",
    "MACHINE_JUDGE_MODEL",
    "TINKER_API_KEY",
    "OPENROUTER_API_KEY",
)
MACHINE_BIN = Path(sys.executable).parent / "machine"


def greeter(name: str = "greet") -> Machine:
    rubric = define_rubric(
        {
            "greets": {"description": "Says hello.", "weight": 2},
            "brief": "At most 20 characters.",
            "warm": "Sounds friendly.",
        }
    )
    evaluator = define_evaluator(
        rubric,
        {
            "greets": check("says_hello", lambda run: "hello" in run.output.lower()),
            "brief": check("at_most_20", lambda run: 1.0 if len(run.output) <= 20 else 0.5),
            "warm": judge(),
        },
    )
    return define_machine(
        name=name,
        intent="Greet people.",
        instructions="Say hello briefly.",
        model="echo",
        rubric=rubric,
        evaluator=evaluator,
    )


def harness() -> ScriptedHarness:
    rules = [{"match": name, "turns": [{"text": text}]} for name, text in REPLIES.items()]
    return ScriptedHarness(Script.model_validate({"rules": rules}))


def suite_runs(root: Path, suite_id: str) -> list[Run]:
    store = SQLiteStore(root / ".machine" / "store.db")
    try:
        return list(store.iter_suite_runs(suite_id))
    finally:
        store.close()


async def test_every_run_records_its_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHINE_JUDGE_MODEL", raising=False)
    ws = open_workspace(tmp_path, harness=harness())
    report = await run_suite(ws, greeter(), CASES, trials=2)
    assert report.suite_id is not None and report.resumed == 0
    runs = suite_runs(tmp_path, report.suite_id)
    assert len(runs) == 6 and {r.suite_id for r in runs} == {report.suite_id}
    record = ws.store.get_suite(report.suite_id)
    assert (record.machine, record.trials, [c["id"] for c in record.cases]) == (
        "greet",
        2,
        ["ann", "bob", "cat"],
    )
    # Provenance: library version and revision on the run; the judge's model on its grade.
    run = runs[0]
    assert run.library_version and run.harness == "scripted" and run.model == "echo"
    assert run.scorecard is not None
    warm = run.scorecard.criteria["warm"]
    assert warm.details["model"] and warm.grader == f"judge:{warm.details['model']}"


async def test_resume_runs_only_the_missing_pairs(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=harness())
    first = await run_suite(ws, greeter(), CASES, trials=4)
    assert first.suite_id is not None
    before = {(r.case_id, r.trial): r.id for r in suite_runs(tmp_path, first.suite_id)}
    assert len(before) == 12
    lost = [("ann", 0), ("bob", 3), ("cat", 1), ("cat", 2)]
    db = sqlite3.connect(tmp_path / ".machine" / "store.db")
    with db:
        for case_id, trial in lost:
            db.execute("DELETE FROM runs WHERE case_id = ? AND trial = ?", (case_id, trial))
    db.close()

    rerun: list[tuple[str | None, int | None]] = []
    started: list[tuple[int, int]] = []
    report = await run_suite(
        ws,
        greeter(),
        CASES,
        trials=4,
        resume=True,
        on_run=lambda run: rerun.append((run.case_id, run.trial)),
        on_start=lambda r, remaining: started.append((r.resumed, remaining)),
    )
    assert report.suite_id == first.suite_id
    assert started == [(8, 4)]
    assert sorted(rerun) == sorted(lost)
    after = suite_runs(tmp_path, first.suite_id)
    assert Counter((r.case_id, r.trial) for r in after) == {(c.id, t): 1 for c in CASES for t in range(4)}
    for run in after:  # what was stored before is kept, not rerun
        key = (run.case_id, run.trial)
        if key not in lost:
            assert run.id == before[key]
        else:
            assert run.id != before[key]
    assert report.runs == 12 and report.resumed == 8
    for case in report.cases:
        assert case.trials == 4
        assert case.scores == pytest.approx([SCORES[case.case_id]] * 4)
    assert report.pass_rate == 0.0 and report.undecided == 4  # ann's runs: warm UNSCORED could fail them
    assert report.criteria["greets"].runs == 12 and report.criteria["warm"].unscored == 12

    again = await run_suite(ws, greeter(), CASES, trials=4, resume=first.suite_id)
    assert (again.resumed, again.runs) == (12, 12)  # nothing left to run
    assert len(suite_runs(tmp_path, first.suite_id)) == 12


async def test_resume_picks_the_newest_suite_on_the_same_cases_and_trials(tmp_path: Path) -> None:
    ws = open_workspace(tmp_path, harness=harness())
    await run_suite(ws, greeter(), CASES, trials=1)
    newest = await run_suite(ws, greeter(), CASES, trials=1)
    other = await run_suite(ws, greeter(), CASES[:2], trials=1)  # other cases: another suite
    resumed = await run_suite(ws, greeter(), CASES, trials=1, resume=True)
    assert resumed.suite_id == newest.suite_id != other.suite_id
    assert (resumed.resumed, resumed.runs) == (3, 3)
    with pytest.raises(NotFoundError, match="2 trials each"):
        await run_suite(ws, greeter(), CASES, trials=2, resume=True)
    assert newest.suite_id is not None
    with pytest.raises(BadInputError, match="ran machine 'greet'"):
        await run_suite(ws, greeter("other"), CASES, resume=newest.suite_id)
    with pytest.raises(NotFoundError, match="no suite"):
        await run_suite(ws, greeter(), CASES, resume="20000101-000000-00000000")


OLD_SCHEMA = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY, machine TEXT NOT NULL, created_at TEXT NOT NULL, status TEXT NOT NULL,
    case_id TEXT, trial INTEGER, conversation_id TEXT, score REAL, data TEXT NOT NULL
);
CREATE INDEX runs_newest ON runs (machine, created_at DESC, id DESC);
"""


def test_a_store_made_before_suite_ids_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Run(machine="greet", model="echo", harness="echo", input="hi", output="hi")
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    data = old.model_dump(mode="json")
    del data["suite_id"]  # a run written by the older library
    db.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (old.id, "greet", "2026-01-01T00:00:00.000000Z", "ok", None, None, None, None, json.dumps(data)),
    )
    db.commit()
    db.close()
    store = SQLiteStore(path)
    try:
        assert store.get(old.id).suite_id is None
        new = Run(
            machine="greet", model="echo", harness="echo", input="hi", suite_id="20260101-000000-aaaaaaaa"
        )
        store.put_many([new])
        assert [r.id for r in store.iter_suite_runs("20260101-000000-aaaaaaaa")] == [new.id]
        plan = store._db.execute(
            "EXPLAIN QUERY PLAN SELECT created_at, id, data FROM runs WHERE suite_id = ?"
            " AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT 500",
            ("x", "", ""),
        ).fetchall()
        assert any("runs_suite" in str(row) for row in plan), plan
    finally:
        store.close()
    SQLiteStore(path).close()  # opening it again changes nothing


# A machine whose every run calls a tool that sleeps, so a suite of 200 runs takes seconds.
NAP_PY = """\
import anyio

from machine import check, define_evaluator, define_machine, define_rubric, tool

rubric = define_rubric({"done": "The reply says done."})


@tool
async def nap(seconds: float) -> str:
    \"\"\"Sleep a moment.\"\"\"
    await anyio.sleep(seconds)
    return "rested"


machine = define_machine(
    name="nap",
    intent="Nap, then say done.",
    instructions="Call nap, then say done.",
    model="echo",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {"done": check("says_done", lambda run: run.output == "done")}),
    tools=[nap],
)
"""
NAP_SCRIPT = {
    "rules": [
        {
            "match": ".",
            "turns": [{"tool_calls": [{"name": "nap", "arguments": {"seconds": 0.05}}]}, {"text": "done"}],
        }
    ]
}
NAP_CASES = [{"id": f"c{i}", "input": f"case {i}"} for i in range(4)]
NAP_TRIALS = 50  # 200 pairs: the first batch of 64 is written well before the end


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    clean["PYTHONDONTWRITEBYTECODE"] = "1"
    return clean


def nap_workspace(root: Path) -> Path:
    (root / "machines" / "nap").mkdir(parents=True)
    (root / "machines" / "nap" / "machine.py").write_text(NAP_PY, encoding="utf-8")
    (root / "machines" / "nap" / "cases.json").write_text(json.dumps(NAP_CASES), encoding="utf-8")
    (root / "script.json").write_text(json.dumps(NAP_SCRIPT), encoding="utf-8")
    return root


def stored_count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(connection.execute("SELECT count(*) FROM runs").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


@pytest.mark.slow
def test_resume_after_sigkill_completes_the_missing_pairs_only(tmp_path: Path) -> None:
    root = nap_workspace(tmp_path / "ws")
    db = root / ".machine" / "store.db"
    common = [
        "nap",
        "--trials",
        str(NAP_TRIALS),
        "--harness",
        "scripted",
        "--script",
        str(root / "script.json"),
    ]
    common += ["--workspace", str(root)]
    process = subprocess.Popen(
        [str(MACHINE_BIN), "suite", *common, "--concurrency", "2"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while stored_count(db) < WRITE_BATCH and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    store = SQLiteStore(db)
    try:
        runs = list(store.iter_runs("nap"))
    finally:
        store.close()
    total = len(NAP_CASES) * NAP_TRIALS
    assert WRITE_BATCH <= len(runs) < total  # killed midway, after at least one batch
    (suite_id,) = {r.suite_id for r in runs}
    assert suite_id is not None
    before = {(r.case_id, r.trial): r.id for r in runs}
    assert len(before) == len(runs)

    done = subprocess.run(
        [str(MACHINE_BIN), "suite", *common, "--concurrency", "8", "--resume", "--json"],
        capture_output=True,
        text=True,
        env=env(),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"resuming suite {suite_id}: {len(runs)} pairs done, {total - len(runs)} to run" in done.stderr
    report = json.loads(done.stdout)
    assert report["suite_id"] == suite_id and report["resumed"] == len(runs)
    assert report["summary"]["runs"] == total and report["summary"]["errors"] == 0
    assert report["summary"]["pass_rate"] == 1.0
    assert all(case["trials"] == NAP_TRIALS for case in report["cases"])

    after = suite_runs(root, suite_id)
    pairs = Counter((r.case_id, r.trial) for r in after)
    assert pairs == {(c["id"], t): 1 for c in NAP_CASES for t in range(NAP_TRIALS)}
    ids = {(r.case_id, r.trial): r.id for r in after}
    assert all(ids[pair] == run_id for pair, run_id in before.items())  # none of them was rerun


def test_cli_resume_names_the_suite_and_refuses_when_there_is_none(tmp_path: Path) -> None:
    root = nap_workspace(tmp_path / "ws")
    args = ["suite", "nap", "--harness", "scripted", "--script", str(root / "script.json")]
    args += ["--workspace", str(root)]
    runner = CliRunner()

    def invoke(*more: str) -> Any:
        return runner.invoke(cli, [*args, *more], catch_exceptions=False, env=dict.fromkeys(SCRUBBED))

    refused = invoke("--resume")
    assert refused.exit_code != 0 and "nothing to resume" in refused.stderr
    first = invoke("--json")
    assert first.exit_code == 0, first.stderr
    suite_id = json.loads(first.stdout)["suite_id"]
    again = invoke("--resume", suite_id, "--json")
    assert again.exit_code == 0, again.stderr
    assert f"resuming suite {suite_id}: 4 pairs done, 0 to run" in again.stderr
    assert json.loads(again.stdout)["summary"]["runs"] == 4
    mixed = invoke("--resume", "--tree")
    assert mixed.exit_code != 0 and "--tree" in mixed.stderr
