"""The SQLite store, on a real file: upserts, listings, paging, permissions, indexes, two writers."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers.stores import rows_of

from machine.errors import BadInputError, DefinitionError, NotFoundError
from machine.runs import (
    ChatSession,
    CriterionScore,
    Message,
    Run,
    RunSummary,
    Scorecard,
    SQLiteStore,
    Store,
    Tag,
    Timings,
    ToolCall,
    Usage,
)
from machine.runs._rows import INPUT_PREVIEW
from machine.runs._statements import PAGE_SIZE

# the store's SQL, planned by SQLite on purpose
NEWEST_RUNS_SQL = SQLiteStore.sql.newest_runs
NEWEST_SUMMARIES_SQL = SQLiteStore.sql.newest_summaries
PAGE_MACHINE_RUNS_SQL = SQLiteStore.sql.page_machine_runs
PAGE_RUNS_SQL = SQLiteStore.sql.page_runs

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_run(run_id: str, machine: str = "red", at: datetime = T0, **fields: Any) -> Run:
    fields.setdefault("timings", Timings(started_at=at))
    return Run(id=run_id, machine=machine, model="echo", harness="echo", input=f"input of {run_id}", **fields)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def plan(store: SQLiteStore, sql: str, args: tuple[object, ...]) -> list[str]:
    """SQLite's plan for ``sql``, one detail line per step, asked on a separate connection."""
    with sqlite3.connect(store.path) as db:
        return [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql, args)]


class RecordingConnection:
    """Stands between the store and its real connection and notes the SQL text of every call."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real
        self.seen: list[str] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.seen.append(sql)
        return self.real.execute(sql, *args)


def executed(store: SQLiteStore, action: Callable[[], object]) -> list[str]:
    """The SQL text (placeholders and all) the store passes to SQLite while ``action()`` runs."""
    real = store._db
    recorder = RecordingConnection(real)
    store._db = recorder  # type: ignore[assignment]
    try:
        action()
    finally:
        store._db = real
    return recorder.seen


def assert_no_scan(details: list[str], index: str) -> None:
    assert any(index in detail for detail in details), details
    for detail in details:
        assert not (detail.startswith("SCAN runs") and "INDEX" not in detail), details
        assert "TEMP B-TREE" not in detail, details


# --- upserts and lookups -----------------------------------------------------------------------------------


def test_put_twice_with_a_changed_field_keeps_one_row_with_the_new_value(store: Store) -> None:
    store.put(make_run("r1", output="first"))
    store.put(make_run("r1", output="second", status="error", error="boom"))

    assert store.count() == 1
    assert store.count("red") == 1
    again = store.get("r1")
    assert again.output == "second"
    assert again.status == "error"
    assert again.error == "boom"
    assert [run.output for run in store.runs("red")] == ["second"]


def test_put_moves_a_run_when_its_machine_or_time_changes(store: Store) -> None:
    store.put(make_run("r1", machine="red", at=T0))
    store.put(make_run("r1", machine="blue", at=T0 + timedelta(hours=1)))

    assert store.runs("red") == []
    assert [run.id for run in store.runs("blue")] == ["r1"]
    assert store.count() == 1


def test_get_of_a_missing_id_raises_not_found_naming_the_id(store: Store) -> None:
    store.put(make_run("present"))
    with pytest.raises(NotFoundError, match="no-such-run"):
        store.get("no-such-run")


def test_a_run_with_a_scorecard_round_trips_unchanged(store: Store) -> None:
    run = make_run(
        "graded",
        version="v3",
        revision="abc123",
        instructions="Answer briefly.",
        history=[Message(role="user", content="earlier"), Message(role="assistant", content="before")],
        trajectory=[
            Message(role="user", content="what is 2+2?"),
            Message(
                role="assistant",
                content="",
                reasoning="add them",
                tool_calls=[ToolCall(id="c1", name="calc", arguments={"expr": "2+2", "n": [1, 2.5, None]})],
            ),
            Message(role="tool", content="4", tool_call_id="c1", name="calc"),
            Message(role="assistant", content="4 — “four”"),
        ],
        output="4 — “four”",
        usage=Usage(input_tokens=120, cached_input_tokens=40, output_tokens=9),
        cost_usd=0.000123,
        stop_reason="end_turn",
        case_id="sum-1",
        case={"input": "what is 2+2?", "expected": "4"},
        trial=2,
        conversation_id="conv-1",
        scorecard=Scorecard(
            rubric_fingerprint="f" * 16,
            criteria={
                "correct": CriterionScore(
                    criterion="correct", weight=2.0, grader="check:equals", score=1.0, details={"want": "4"}
                ),
                "brief": CriterionScore(
                    criterion="brief",
                    weight=1.0,
                    grader="judge",
                    score=None,
                    reason="the judge gave no usable verdict",
                    cost_usd=0.0004,
                ),
            },
            pass_score=0.8,
            graded_at=T0 + timedelta(seconds=5),
        ),
        tags=[Tag(kind="good", note="clean", at=T0 + timedelta(minutes=1))],
        timings=Timings(started_at=T0, finished_at=T0 + timedelta(seconds=3, microseconds=250)),
    )
    store.put(run)

    assert store.get("graded").model_dump() == run.model_dump()
    assert [r.model_dump() for r in store.runs("red")] == [run.model_dump()]
    assert [r.model_dump() for r in store.iter_runs()] == [run.model_dump()]
    assert store.get("graded").score == pytest.approx(1.0)
    assert store.get("graded").scorecard.unscored == ["brief"]  # type: ignore[union-attr]


# --- listings ----------------------------------------------------------------------------------------------


def test_runs_lists_newest_first_only_that_machine_and_breaks_ties_by_id(store: Store) -> None:
    store.put(make_run("old", at=T0))
    store.put(make_run("mid-a", at=T0 + timedelta(minutes=1)))
    store.put(make_run("mid-c", at=T0 + timedelta(minutes=1)))
    store.put(make_run("mid-b", at=T0 + timedelta(minutes=1)))
    store.put(make_run("new", at=T0 + timedelta(minutes=2)))
    store.put(make_run("other-newest", machine="blue", at=T0 + timedelta(hours=1)))
    store.put(make_run("child", machine="red/child", at=T0 + timedelta(hours=1)))

    assert [run.id for run in store.runs("red", 20)] == ["new", "mid-c", "mid-b", "mid-a", "old"]
    assert [run.id for run in store.runs("red", 2)] == ["new", "mid-c"]
    assert [run.id for run in store.runs("blue")] == ["other-newest"]
    assert [run.id for run in store.runs("red/child")] == ["child"]
    assert store.runs("nobody") == []


def test_runs_orders_by_instant_whatever_the_time_zone(store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    store.put(make_run("earlier", at=datetime(2026, 1, 1, 11, 0, tzinfo=plus_two)))  # 09:00 UTC
    store.put(make_run("later", at=datetime(2026, 1, 1, 10, 0, tzinfo=UTC)))

    assert [run.id for run in store.runs("red")] == ["later", "earlier"]


def card(*scores: float | None, pass_score: float = 1.0) -> Scorecard:
    """A scorecard with one criterion (weight 1) per score."""
    return Scorecard(
        rubric_fingerprint="fp",
        criteria={
            f"c{i}": CriterionScore(criterion=f"c{i}", weight=1.0, grader="rule", score=score)
            for i, score in enumerate(scores)
        },
        pass_score=pass_score,
    )


def assert_summary_is_the_run(summary: RunSummary, run: Run) -> None:
    """Every field of ``summary`` equals what the full ``run`` says (``RunSummary.of(run)`` and the rest)."""
    assert summary == RunSummary.of(run)
    assert summary.id == run.id
    assert summary.created_at == run.created_at
    assert summary.status == run.status
    assert summary.score == run.score
    assert summary.passed is run.passed
    assert summary.graded is (run.scorecard is not None)
    assert summary.cost_usd == run.cost_usd
    assert summary.case_id == run.case_id
    assert summary.trial == run.trial
    assert summary.suite_id == run.suite_id
    assert summary.version == run.version
    assert summary.model == run.model
    assert summary.harness == run.harness
    assert summary.error == run.error
    assert summary.input_preview == run.input[:INPUT_PREVIEW]


def test_summaries_equal_the_full_runs_field_by_field(store: Store) -> None:
    at = iter(T0 + timedelta(minutes=i) for i in range(100))
    trajectory = [
        Message(role="user", content="go"),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="t1", name="ls", arguments={})]),
        Message(role="tool", content="a\nb", tool_call_id="t1", name="ls"),
    ]
    mixed = [
        make_run("ungraded", at=next(at), cost_usd=0.0123, trajectory=trajectory),
        make_run(
            "passed", at=next(at), case_id="c1", trial=2, suite_id="s1", version="v3", scorecard=card(1.0)
        ),
        make_run("failed-grade", at=next(at), case_id="c2", trial=0, scorecard=card(1.0, 0.0)),
        make_run("lenient", at=next(at), scorecard=card(1.0, 1.0, 0.0, pass_score=0.6)),
        make_run("just-short", at=next(at), scorecard=card(1.0, 0.0, pass_score=0.5 + 1e-6)),
        make_run("at-the-bar", at=next(at), scorecard=card(0.7, pass_score=0.7)),
        make_run("unscored", at=next(at), scorecard=card(None, None)),
        make_run("error", at=next(at), status="error", error="the model's endpoint said 500", cost_usd=1e-05),
        make_run("error-graded", at=next(at), status="error", error="boom", scorecard=card(0.0)),
        Run(
            id="long-input",
            machine="red",
            model="gpt-x",
            harness="tools",
            input='é🙂 "quoted"\n' * 50,
            timings=Timings(
                started_at=datetime(
                    2026, 1, 1, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30))
                )
            ),
        ),
        make_run("other-machine", machine="blue", at=next(at), scorecard=card(1.0)),
    ]
    store.put_many(mixed)
    expected = [run for run in store.runs("red", 100)]  # the full runs, as stored, newest first
    assert len(expected) == len(mixed) - 1

    summaries = store.summaries("red", 100)
    assert [s.id for s in summaries] == [run.id for run in expected]
    for summary, run in zip(summaries, expected, strict=True):
        assert_summary_is_the_run(summary, run)
    by_id = {s.id: s for s in summaries}
    assert by_id["passed"].passed is True and by_id["failed-grade"].passed is False
    assert by_id["lenient"].passed is True and by_id["just-short"].passed is False
    assert by_id["at-the-bar"].passed is True
    assert by_id["unscored"].graded and by_id["unscored"].passed is None and by_id["unscored"].score is None
    assert not by_id["ungraded"].graded and by_id["ungraded"].passed is None
    assert by_id["long-input"].created_at.utcoffset() == timedelta(hours=5, minutes=30)

    assert [s.id for s in store.summaries("red", 3)] == [run.id for run in expected[:3]]
    assert [s.id for s in store.summaries("blue")] == ["other-machine"]
    assert_summary_is_the_run(store.summaries("blue")[0], store.get("other-machine"))
    assert store.summaries("nobody") == []


def test_summaries_list_like_runs_newest_first_with_ties_by_id(store: Store) -> None:
    for run_id, minutes in (("old", 0), ("mid-a", 1), ("mid-c", 1), ("mid-b", 1), ("new", 2)):
        store.put(make_run(run_id, at=T0 + timedelta(minutes=minutes)))
    store.put(make_run("child", machine="red/child", at=T0 + timedelta(hours=1)))

    assert [s.id for s in store.summaries("red")] == ["new", "mid-c", "mid-b", "mid-a", "old"]
    assert [s.id for s in store.summaries("red", 2)] == ["new", "mid-c"]
    assert [s.id for s in store.summaries("red/child")] == ["child"]


def test_iter_runs_streams_every_run_across_pages_oldest_first(store: Store) -> None:
    # Three runs share each instant so that ties fall across page boundaries too.
    total = 2 * PAGE_SIZE + 203
    runs = [
        make_run(f"run-{i:05d}", machine="red" if i % 3 else "blue", at=T0 + timedelta(seconds=i // 3))
        for i in range(total)
    ]
    for run in reversed(runs):
        store.put(run)

    every = [run.id for run in store.iter_runs()]
    assert every == [run.id for run in runs]
    assert len(set(every)) == total

    red = [run.id for run in store.iter_runs("red")]
    assert red == [run.id for run in runs if run.machine == "red"]
    assert len(red) > PAGE_SIZE
    assert [run.id for run in store.iter_runs("blue")] == [run.id for run in runs if run.machine == "blue"]
    assert list(store.iter_runs("nobody")) == []


def test_iter_runs_of_exactly_one_page(store: Store) -> None:
    store.put_many(make_run(f"r{i:04d}", at=T0 + timedelta(seconds=i)) for i in range(PAGE_SIZE))
    assert len(list(store.iter_runs())) == PAGE_SIZE
    assert len(list(store.iter_runs("red"))) == PAGE_SIZE


# --- put_many ----------------------------------------------------------------------------------------------


def test_put_many_is_an_upsert_too(store: Store) -> None:
    store.put(make_run("r1", output="first"))
    store.put_many([make_run("r1", output="second"), make_run("r2"), make_run("r2", output="last wins")])

    assert store.count() == 2
    assert store.get("r1").output == "second"
    assert store.get("r2").output == "last wins"


def test_put_many_writes_nothing_when_one_name_is_bad(store: Store) -> None:
    store.put(make_run("kept"))
    with pytest.raises(DefinitionError, match="Bad Name"):
        store.put_many([make_run("fine"), make_run("bad", machine="Bad Name")])
    assert store.count() == 1
    with pytest.raises(NotFoundError):
        store.get("fine")


def test_put_many_writes_nothing_when_the_runs_given_fail_part_way(store: Store) -> None:
    """An import hands its runs over as it makes them: one it refuses after others were made stores none."""

    def made() -> Iterator[Run]:
        yield make_run("first")
        yield make_run("second")
        raise BadInputError("the third sample is out of shape")

    store.put(make_run("kept"))
    with pytest.raises(BadInputError, match="third sample"):
        store.put_many(made())
    assert [run.id for run in store.runs("red", limit=10)] == ["kept"]


# --- names -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run_id", "machine", "named"),
    [("ok-id", "Bad Name", "Bad Name"), ("../x", "red", "../x"), ("", "red", "run id"), ("r", "", "machine")],
)
def test_invalid_names_are_refused_before_anything_is_written(
    store: Store, run_id: str, machine: str, named: str
) -> None:
    store.put(make_run("existing"))
    with pytest.raises(DefinitionError, match=named.replace(".", r"\.")):
        store.put(make_run(run_id, machine=machine))
    assert store.count() == 1
    assert [run.id for run in store.iter_runs()] == ["existing"]


def test_invalid_session_names_are_refused(store: Store) -> None:
    with pytest.raises(DefinitionError, match="Bad Name"):
        store.put_session(ChatSession(name="Bad Name", machine="red", conversation_id="c"))
    with pytest.raises(DefinitionError, match="Bad Name"):
        store.put_session(ChatSession(name="chat", machine="Bad Name", conversation_id="c"))
    assert store.latest_session("red") is None


# --- sessions ----------------------------------------------------------------------------------------------


def test_sessions_put_get_latest_and_upsert(store: Store) -> None:
    assert store.latest_session("red") is None
    with pytest.raises(NotFoundError, match="morning"):
        store.get_session("morning")

    morning = ChatSession(
        name="morning",
        machine="red",
        conversation_id="c1",
        history=[Message(role="user", content="hi"), Message(role="assistant", content="hello")],
        updated_at=T0,
    )
    evening = ChatSession(
        name="evening", machine="red", conversation_id="c2", updated_at=T0 + timedelta(hours=9)
    )
    other = ChatSession(
        name="blue-chat", machine="blue", conversation_id="c3", updated_at=T0 + timedelta(days=1)
    )
    for session in (morning, evening, other):
        store.put_session(session)

    assert store.get_session("morning") == morning
    assert store.latest_session("red") == evening
    assert store.latest_session("blue") == other
    assert store.latest_session("green") is None

    resumed = morning.model_copy(
        update={
            "history": [*morning.history, Message(role="user", content="again")],
            "updated_at": T0 + timedelta(hours=10),
        }
    )
    store.put_session(resumed)
    assert store.get_session("morning") == resumed
    assert store.latest_session("red") == resumed
    assert rows_of(store, "SELECT count(*) FROM sessions WHERE name = 'morning'") == [(1,)]


# --- the file ----------------------------------------------------------------------------------------------


def test_a_fresh_store_is_private(tmp_path: Path) -> None:
    store = SQLiteStore.in_workspace(tmp_path)
    try:
        store.put(make_run("r1"))
        folder = tmp_path / ".machine"
        assert store.path == folder / "store.db"
        assert mode(folder) == 0o700
        assert mode(store.path) == 0o600
        for side in ("store.db-wal", "store.db-shm"):  # WAL's side files hold the same data
            assert mode(folder / side) == 0o600
    finally:
        store.close()


def test_an_existing_loose_folder_and_file_are_tightened(tmp_path: Path) -> None:
    folder = tmp_path / ".machine"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "store.db").touch()
    os.chmod(folder / "store.db", 0o644)

    store = SQLiteStore.in_workspace(tmp_path)
    try:
        store.put(make_run("r1"))
        assert mode(folder) == 0o700
        assert mode(folder / "store.db") == 0o600
        assert store.get("r1").id == "r1"
    finally:
        store.close()


def test_a_store_file_in_a_folder_it_did_not_make_leaves_that_folder_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    store = SQLiteStore(shared / "runs.db")
    store.close()
    assert mode(shared) == 0o755
    assert mode(shared / "runs.db") == 0o600

    made = SQLiteStore(tmp_path / "new" / "runs.db")
    made.close()
    assert mode(tmp_path / "new") == 0o700


def test_wal_mode_is_on(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    store.put(make_run("r1"))
    assert store._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with sqlite3.connect(store.path) as db:  # WAL is a property of the file, seen by every connection
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_store_reopens_with_its_runs(tmp_path: Path) -> None:
    first = SQLiteStore.in_workspace(tmp_path)
    first.put(make_run("r1"))
    first.close()
    second = SQLiteStore.in_workspace(tmp_path)
    try:
        assert [run.id for run in second.runs("red")] == ["r1"]
    finally:
        second.close()


# --- indexes -----------------------------------------------------------------------------------------------


def fill_for_plans(store: Store) -> None:
    """Enough rows over several machines, with statistics, that the planner's choice is a real one."""
    store.put_many(
        make_run(f"r{i:05d}", machine=f"m{i % 10}", at=T0 + timedelta(seconds=i)) for i in range(3000)
    )
    store._db.execute("ANALYZE")


def test_the_newest_runs_query_walks_the_index(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    fill_for_plans(store)
    statements = executed(store, lambda: store.runs("m3", 20))
    assert NEWEST_RUNS_SQL in statements  # the constant is the text the store really runs

    details = plan(store, NEWEST_RUNS_SQL, ("m3", 20))
    assert_no_scan(details, "runs_newest")


def test_the_newest_summaries_query_walks_the_index(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    fill_for_plans(store)
    statements = executed(store, lambda: store.summaries("m3", 20))
    assert NEWEST_SUMMARIES_SQL in statements  # the constant is the text the store really runs

    details = plan(store, NEWEST_SUMMARIES_SQL, ("m3", 20))
    assert_no_scan(details, "runs_newest")


def test_paging_through_runs_walks_an_index(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    fill_for_plans(store)

    def page_through() -> None:
        assert len(list(store.iter_runs())) == 3000
        assert len(list(store.iter_runs("m3"))) == 300

    statements = executed(store, page_through)
    assert PAGE_RUNS_SQL in statements
    assert PAGE_MACHINE_RUNS_SQL in statements

    assert_no_scan(plan(store, PAGE_RUNS_SQL, ("", "")), "runs_created")
    assert_no_scan(plan(store, PAGE_MACHINE_RUNS_SQL, ("m3", "", "")), "runs_newest")


# --- two processes -----------------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    from datetime import UTC, datetime, timedelta
    from pathlib import Path
    from machine.runs import Run, SQLiteStore, Timings

    path, prefix, go, count = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    store = SQLiteStore(path)
    deadline = time.monotonic() + 30
    while not go.exists():  # start together, so the writes really overlap
        if time.monotonic() > deadline:
            sys.exit("the go file never appeared")
        time.sleep(0.001)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(count):
        store.put(Run(id=f"{prefix}-{i:04d}", machine="red", model="echo", harness="echo",
                      input=str(i), timings=Timings(started_at=start + timedelta(milliseconds=i))))
    store.close()
    """
)


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".machine" / "store.db"
    go = tmp_path / "go"
    per_process = 300
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), prefix, str(go), str(per_process)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for prefix in ("a", "b")
    ]
    try:
        go.touch()
        for writer in writers:
            _, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err.decode()
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()

    store = SQLiteStore(path)
    try:
        assert store.count() == 2 * per_process
        ids = {run.id for run in store.iter_runs()}
        assert ids == {f"{prefix}-{i:04d}" for prefix in ("a", "b") for i in range(per_process)}
        assert len(store.runs("red", 1000)) == 2 * per_process
    finally:
        store.close()


def test_learnable_runs_are_chosen_on_their_columns_and_text_before_parsing(store: Store) -> None:
    """Finished runs scoring at least the score, or carrying a mark asked for; failed runs never; the tally
    counts every stored and every finished run."""
    store.put_many(
        [
            make_run("high", at=T0, scorecard=card(1.0)),
            make_run("low", at=T0 + timedelta(seconds=1), scorecard=card(0.5)),
            make_run("ungraded", at=T0 + timedelta(seconds=2)),
            make_run("marked", at=T0 + timedelta(seconds=3), scorecard=card(0.0), tags=[Tag(kind="good")]),
            make_run("bad", at=T0 + timedelta(seconds=4), scorecard=card(1.0), tags=[Tag(kind="bad")]),
            make_run("failed", at=T0 + timedelta(seconds=5), status="error", scorecard=card(1.0)),
            make_run("elsewhere", machine="blue", scorecard=card(1.0)),
        ]
    )

    def ids(min_score: float | None, *marks: str) -> list[str]:
        return [r.id for r in store.iter_learnable("red", min_score=min_score, marks=marks)]

    assert ids(1.0, "good") == ["high", "marked", "bad"]  # a superset: the bad mark is decided later
    assert ids(0.5) == ["high", "low", "bad"]
    assert ids(None, "good") == ["marked"]
    assert ids(None, "bad") == ["bad"]
    assert ids(None) == ["high", "low", "ungraded", "marked", "bad"]
    assert store.tally("red") == (6, 5)
    assert store.tally("nobody") == (0, 0)


def test_learnable_runs_page_past_a_page(store: Store) -> None:
    store.put_many(
        make_run(f"r{i:04d}", at=T0 + timedelta(seconds=i), scorecard=card(1.0 if i % 2 else 0.0))
        for i in range(PAGE_SIZE * 2 + 3)
    )
    found = [r.id for r in store.iter_learnable("red", min_score=1.0, marks=())]
    assert found == [f"r{i:04d}" for i in range(PAGE_SIZE * 2 + 3) if i % 2]
