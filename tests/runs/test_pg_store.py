"""The PostgreSQL store against a real server on loopback (the tests every store passes are in
test_store.py and test_store_views.py): migrations numbered and applied once, even by two processes
opening a new database at once; the newest runs an index walk; two writers at once losing nothing; a
server it cannot reach said in words without the password; ``MACHINE_STORE`` and ``--store`` choosing
it; ``machine store copy`` moving a workspace's history into it, twice without change."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.env import MACHINE_BIN, clean_env
from helpers.postgres import fresh_schema

from machine import open_workspace
from machine.clients.postgres import PostgresStore
from machine.clients.postgres._schema import MIGRATIONS
from machine.clients.postgres._sql import NEWEST_RUNS, NEWEST_SUMMARIES
from machine.errors import StoreError
from machine.ops import WorkspaceSpendingLog
from machine.runs import ChatSession, Run, SQLiteStore, SuiteRecord, Timings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_run(i: int, machine: str = "red", **fields: object) -> Run:
    timings = Timings(started_at=T0 + timedelta(seconds=i))
    said = {"model": "echo", "harness": "echo", "input": f"in {i}", "timings": timings}
    return Run(id=f"r{i:05d}", machine=machine, **said, **fields)  # type: ignore[arg-type]


@pytest.fixture
def url(postgres_url: str) -> str:
    return fresh_schema(postgres_url)


def test_migrations_are_numbered_and_applied_once(url: str) -> None:
    import psycopg  # here, as in each test that talks to the server: not an import of every collection

    PostgresStore(url).close()
    PostgresStore(url).close()  # a second opening applies nothing
    with psycopg.connect(url) as db:
        applied = [row[0] for row in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert applied == list(range(1, len(MIGRATIONS) + 1))


OPENER = textwrap.dedent(
    """
    import sys
    from machine.clients.postgres import PostgresStore
    PostgresStore(sys.argv[1]).close()
    """
)


def test_two_processes_opening_a_new_database_at_once_migrate_it_once(url: str) -> None:
    import psycopg

    command = [sys.executable, "-c", OPENER, url]
    openers = [subprocess.Popen(command, stderr=subprocess.PIPE) for _ in range(3)]
    for opener in openers:
        _, err = opener.communicate(timeout=60)
        assert opener.returncode == 0, err.decode()
    with psycopg.connect(url) as db:
        assert db.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(MIGRATIONS),)


def test_the_newest_runs_walk_the_index(url: str) -> None:
    import psycopg

    store = PostgresStore(url)
    store.put_many(make_run(i, machine=f"m{i % 10}") for i in range(3000))
    store.close()
    with psycopg.connect(url) as db:
        db.execute("ANALYZE runs")
        db.execute("SET enable_seqscan = off")  # whether the index can answer, in order, with no sort
        for statement in (NEWEST_RUNS, NEWEST_SUMMARIES):
            plan = [row[0] for row in db.execute("EXPLAIN " + statement, ("m3", 20))]
            assert any("runs_newest" in line for line in plan), plan
            assert not any("Sort" in line for line in plan), plan


WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime, timedelta
    from machine.clients.postgres import PostgresStore
    from machine.runs import Run, Timings
    url, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = PostgresStore(url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(count):
        store.put(Run(id=f"{prefix}-{i:04d}", machine="red", model="echo", harness="echo", input=str(i),
                      timings=Timings(started_at=start + timedelta(milliseconds=i))))
    store.close()
    """
)


def test_two_processes_writing_at_once_lose_nothing(url: str) -> None:
    PostgresStore(url).close()
    per_process = 300
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, url, p, str(per_process)], stderr=subprocess.PIPE)
        for p in ("a", "b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    store = PostgresStore(url)
    assert store.count() == 2 * per_process
    assert {r.id for r in store.iter_runs()} == {f"{p}-{i:04d}" for p in "ab" for i in range(per_process)}
    store.close()


def test_a_server_it_cannot_reach_is_said_in_words_without_the_password() -> None:
    with pytest.raises(StoreError) as refused:
        PostgresStore("postgresql://someone:s3cret-word@127.0.0.1:1/runs?connect_timeout=2")
    said = str(refused.value)
    assert "postgresql://someone:***@127.0.0.1:1/runs" in said and "s3cret-word" not in said
    assert "check that the server is running" in said


def test_machine_store_chooses_postgres_for_a_workspace(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_STORE", url)
    ws = open_workspace(tmp_path)
    assert isinstance(ws.store, PostgresStore)
    assert not (tmp_path / ".machine" / "store.db").exists()


def _machine(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MACHINE_BIN), *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=clean_env(env)
    )


def test_a_suite_stores_its_runs_in_postgres_and_the_copy_moves_a_workspace(url: str, tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    script = str(repo / "machines" / "red" / "script.json")
    shutil.copytree(repo / "machines" / "red", tmp_path / "machines" / "red")
    suite = ["suite", "red", "--harness", "scripted", "--script", script, "--budget", "none"]
    shared = _machine(*suite, "--store", url, cwd=tmp_path)
    assert shared.returncode == 0, shared.stderr
    assert not (tmp_path / ".machine" / "store.db").exists()  # nothing went to the workspace's own file
    assert not (tmp_path / ".machine" / "spending.jsonl").exists()  # the spending log is the store's too
    [spent] = PostgresStore(url).spending()
    assert (spent["tool"], spent["machine"], spent["spent_usd"]) == ("suite", "red", 0.0)
    shared_ws = open_workspace(tmp_path, store=PostgresStore(url))
    assert WorkspaceSpendingLog(shared_ws).newest(5) == [spent]  # what the dashboard's spending page reads
    listed = _machine("runs", "red", "--json", cwd=tmp_path, env={"MACHINE_STORE": url})
    assert len(json.loads(listed.stdout)) == 17  # red's cases, read back from PostgreSQL

    local = _machine(*suite, "--trials", "2", cwd=tmp_path)  # into the workspace's own SQLite file
    assert local.returncode == 0, local.stderr
    sqlite = tmp_path / ".machine" / "store.db"
    target = fresh_schema(url.split("?")[0])
    copied = _machine("store", "copy", "--from", str(sqlite), "--to", target, "--json", cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    assert json.loads(copied.stdout) | {"source": "", "target": ""} == {
        "source": "",
        "target": "",
        "runs": 34,
        "suites": 1,
        "sessions": 0,
        "spending": 1,
    }
    again = _machine("store", "copy", "--from", str(sqlite), "--to", target, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "copied 34 runs, 1 suite, 0 chat sessions and 0 spending-log lines" in again.stdout  # had them
    into = PostgresStore(target)
    [line] = (tmp_path / ".machine" / "spending.jsonl").read_text().splitlines()
    assert into.spending() == [json.loads(line)]
    source = SQLiteStore(sqlite)
    assert into.count() == 34
    assert sorted(r.id for r in into.iter_runs()) == sorted(r.id for r in source.iter_runs())
    assert [r.model_dump() for r in into.runs("red", 50)] == [r.model_dump() for r in source.runs("red", 50)]
    into.close()
    source.close()


def test_a_team_sharing_the_store_reuses_each_others_runs_of_a_version(url: str, tmp_path: Path) -> None:
    """Two clones of one workspace (the same versions.json, as git shares it) on one store: every run
    records its version, so the second clone's proposal reuses the first's runs of both versions."""
    repo = Path(__file__).resolve().parents[2]
    shared = fresh_schema(url.split("?")[0])
    script = str(repo / "machines" / "red" / "script.json")
    held_out = len(json.loads((repo / "machines" / "red" / "holdout.json").read_text()))
    propose = ["propose", "red", "--model", "Qwen/Other", "--trials", "1", "--harness", "scripted"]
    said = []
    for clone in ("alice", "bob"):
        shutil.copytree(repo / "machines" / "red", tmp_path / clone / "machines" / "red")
        if clone == "bob":  # bob pulls the versions alice recorded
            shutil.copy(
                tmp_path / "alice" / "machines" / "red" / "versions.json",
                tmp_path / clone / "machines" / "red",
            )
        done = _machine(*propose, "--script", script, "--store", shared, cwd=tmp_path / clone)
        assert done.returncode == 0, done.stderr
        said.append(done.stdout)
    assert f"live v1: {held_out} runs (0 reused, 0 regraded, {held_out} new)" in said[0]
    assert f"live v1: {held_out} runs ({held_out} reused, 0 regraded, 0 new)" in said[1]
    assert f"candidate v2: {held_out} runs ({held_out} reused, 0 regraded, 0 new)" in said[1]
    assert not (tmp_path / "bob" / ".machine" / "store.db").exists()


def test_copy_refuses_a_missing_source_and_the_same_store(url: str, tmp_path: Path) -> None:
    missing = _machine("store", "copy", "--from", str(tmp_path / "nope.db"), "--to", url, cwd=tmp_path)
    assert missing.returncode == 2 and "is not a store file" in missing.stderr
    assert not (tmp_path / "nope.db").exists()
    same = _machine("store", "copy", "--from", url, "--to", url, cwd=tmp_path)
    assert same.returncode == 2 and "are the same store" in same.stderr


def test_suites_and_sessions_round_trip(url: str) -> None:
    store = PostgresStore(url)
    suite = SuiteRecord(id="s1", machine="red", key="k", trials=2, cases=[{"id": "a", "input": "x"}])
    session = ChatSession(name="chat", machine="red", conversation_id="c1")
    store.put_suite(suite)
    store.put_session(session)
    assert list(store.iter_suites()) == [suite] and store.latest_suite("red", "k") == suite
    assert list(store.iter_sessions()) == [session]
    store.close()
