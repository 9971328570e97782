"""The store's reads for a viewer, on a real file: a page of runs by every filter, newest first, paged by
cursor and never reading past its window; a machine's trend; per-case means of a version or a suite; and
the number that tells a watcher another process wrote."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from machine.clients.postgres import PostgresStore
from machine.runs import (
    CriterionScore,
    Run,
    RunFilter,
    Scorecard,
    SQLiteStore,
    Store,
    SuiteRecord,
    Tag,
    Timings,
)
from machine.runs import _views as views

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def scorecard(*scores: float | None, pass_score: float = 1.0) -> Scorecard:
    criteria = {
        f"c{i}": CriterionScore(criterion=f"c{i}", grader="g", score=s, weight=1.0, reason=f"r{i}")
        for i, s in enumerate(scores)
    }
    return Scorecard(criteria=criteria, rubric_fingerprint="f", pass_score=pass_score)


def run(i: int, machine: str = "red", **fields: Any) -> Run:
    fields.setdefault("timings", Timings(started_at=T0 + timedelta(minutes=i)))
    fields.setdefault("model", "m1")
    return Run(id=f"r{i:03d}", machine=machine, harness="echo", input=f"input {i}", **fields)


RUNS = [
    run(0, case_id="a", scorecard=scorecard(1.0), version="v1"),
    run(1, case_id="a", scorecard=scorecard(0.0), version="v1"),
    run(2, case_id="b", scorecard=scorecard(0.5, pass_score=0.5), version="v2", model="m2"),
    run(3, case_id="b", status="error", error="boom", version="v2"),
    run(4, case_id="a", scorecard=scorecard(1.0, None), version="v2", tags=[Tag(kind="good")]),
    run(5, case_id="c"),
    run(6, machine="other", case_id="a", scorecard=scorecard(1.0)),
]


@pytest.fixture
def filled(store: Store) -> Store:
    """A store of each kind, holding ``RUNS``."""
    store.put_many(RUNS)
    return store


def ids(store: Store, **chosen: Any) -> list[str]:
    return [r.id for r in store.page(RunFilter(**chosen)).runs]


def test_a_page_is_the_newest_runs_of_a_machine_first(filled: Store) -> None:
    store = filled
    assert ids(store, machine="red") == ["r005", "r004", "r003", "r002", "r001", "r000"]
    assert ids(store) == ["r006", "r005", "r004", "r003", "r002", "r001", "r000"]
    first = store.page(RunFilter(machine="red")).runs[0]
    assert (first.case_id, first.graded, first.input_preview) == ("c", False, "input 5")


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        ({"case_id": "a"}, ["r004", "r001", "r000"]),
        ({"outcome": "pass"}, ["r002", "r000"]),  # r002 passes at its own pass score 0.5; r004 undecided
        ({"outcome": "fail"}, ["r001"]),
        ({"outcome": "error"}, ["r003"]),
        ({"outcome": "unscored"}, ["r004"]),
        ({"outcome": "ungraded"}, ["r005"]),
        ({"min_score": 0.5}, ["r004", "r002", "r000"]),
        ({"max_score": 0.5}, ["r002", "r001"]),
        ({"model": "m2"}, ["r002"]),
        ({"version": "v2"}, ["r004", "r003", "r002"]),
        ({"tag": "good"}, ["r004"]),
        ({"tag": "bad"}, []),
        ({"since": T0 + timedelta(minutes=2), "until": T0 + timedelta(minutes=4)}, ["r003", "r002"]),
        ({"case_id": "a", "version": "v1", "outcome": "pass"}, ["r000"]),
    ],
)
def test_each_filter_narrows_the_page(filled: Store, chosen: dict[str, Any], expected: list[str]) -> None:
    store = filled
    assert ids(store, machine="red", **chosen) == expected


def test_pass_and_fail_are_the_runs_decided_as_scorecard_passed_decides(store: Store) -> None:
    """A run with an UNSCORED criterion is a pass or a fail only where no mark on it could turn it."""
    cards = {
        "whole": scorecard(1.0, 1.0),  # pass
        "open": scorecard(1.0, None),  # 1.0 on half the weight: warm could fail it
        "safe": scorecard(1.0, 1.0, None, pass_score=0.6),  # 2 of 3 at worst: a pass
        "lost": scorecard(0.0, 0.0, None, pass_score=0.5),  # 1 of 3 at best: a fail
        "short": scorecard(0.5, None),  # 0.75 at best: a fail at 1
    }
    store.put_many([run(i, case_id=name, scorecard=card) for i, (name, card) in enumerate(cards.items())])
    cases = {r.id: r.case_id for r in store.page(RunFilter(machine="red")).runs}
    assert [cases[i] for i in ids(store, machine="red", outcome="pass")] == ["safe", "whole"]
    assert [cases[i] for i in ids(store, machine="red", outcome="fail")] == ["short", "lost"]
    listed = {r.case_id: r.passed for r in store.summaries("red", 10)}
    assert listed == {name: card.passed for name, card in cards.items()}
    assert listed["open"] is None


def test_pages_follow_their_cursor_to_the_end(filled: Store) -> None:
    store = filled
    chosen = RunFilter(machine="red")
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = store.page(chosen, cursor=cursor, limit=4)
        seen += [r.id for r in page.runs]
        cursor = page.next
        if cursor is None:
            break
    assert seen == ["r005", "r004", "r003", "r002", "r001", "r000"]


def test_a_page_reads_no_further_than_its_window(filled: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store = filled
    monkeypatch.setattr(views, "WINDOW", 2)
    chosen = RunFilter(machine="red", case_id="b")
    page = store.page(chosen)  # reads r005 and r004, neither of case b
    assert page.runs == [] and page.window_full and page.next is not None
    found: list[str] = []
    cursor: str | None = None
    for _ in range(10):
        page = store.page(chosen, cursor=cursor)
        found += [r.id for r in page.runs]
        if (cursor := page.next) is None:
            break
    assert found == ["r003", "r002"]


def test_a_page_walks_the_index(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    store.put_many(RUNS)
    chosen = RunFilter(machine="red", case_id="a", outcome="pass")
    statements: list[str] = []

    def query(statement: str, params: Any) -> list[Any]:
        statements.append(statement)
        return store._rows(statement, params)

    views.page(query, store.sql, chosen, cursor=None, limit=5)  # the statement the store runs, planned
    _, values = store.sql.where(chosen)
    with sqlite3.connect(store.path) as db:
        plan = db.execute("EXPLAIN QUERY PLAN " + statements[0], ["red", "\uffff", "", *values, 6])
        steps = [row[3] for row in plan]
    assert any("USING INDEX runs_newest" in s for s in steps), steps
    assert not any("TEMP B-TREE" in s for s in steps), steps  # no sort: the index gives the order


def test_the_trend_is_the_newest_runs_oldest_first(filled: Store) -> None:
    store = filled
    points = store.trend("red", limit=3)
    assert [(p.score, p.status) for p in points] == [(None, "error"), (1.0, "ok"), (None, "ok")]
    assert points[0].at < points[-1].at


def test_case_means_of_a_version_and_of_a_suite(filled: Store) -> None:
    store = filled
    assert store.case_means("red", version="v1") == {"a": (0.5, 2)}
    assert store.case_means("red", version="v2") == {"a": (1.0, 1), "b": (0.25, 2)}  # the error counts 0
    store.put_many([run(10, case_id="a", scorecard=scorecard(0.0), suite_id="s1")])
    assert store.case_means("red", suite_id="s1") == {"a": (0.0, 1)}
    with pytest.raises(ValueError, match="a version or a suite"):
        store.case_means("red")


def test_data_version_changes_when_another_process_writes(filled: Store) -> None:
    store = filled
    before = store.data_version()
    assert store.data_version() == before  # reading changes nothing
    other = SQLiteStore(store.path) if isinstance(store, SQLiteStore) else PostgresStore(store.url)
    other.put(run(20))
    other.close()
    assert store.data_version() != before


def test_choices_and_counts_are_read_alike_in_every_store(filled: Store) -> None:
    store = filled
    store.put_suite(SuiteRecord(id="s1", machine="red", key="k", trials=1, cases=[]))
    chosen = store.choices("red")
    assert (chosen.cases, chosen.models, chosen.versions) == (["a", "b", "c"], ["m1", "m2"], ["v1", "v2"])
    assert [suite["id"] for suite in chosen.suites] == ["s1"]
    assert store.machine_counts() == {"red": 6, "other": 1}
    assert (store.count(), store.count("red"), store.count("nobody")) == (7, 6, 0)


def test_a_search_of_the_stored_text_finds_the_same_runs_in_every_store(filled: Store) -> None:
    store = filled
    assert [r.id for r in store.iter_newest_with('"kind":"good"')] == ["r004"]
    assert [r.id for r in store.iter_newest_with('"case_id":"a"', "red")] == ["r004", "r001", "r000"]
    assert [r.id for r in store.iter_newest_with('"case_id":"a"')] == ["r006", "r004", "r001", "r000"]
    assert list(store.iter_newest_with('"kind":"', "other")) == []


def test_a_page_without_samples_leaves_out_what_an_rl_training_made(filled: Store) -> None:
    filled.put(run(7, scorecard=scorecard(0.0), sampled_for="rl-1 step 3"))
    assert ids(filled, machine="red", outcome="fail")[0] == "r007"
    assert ids(filled, machine="red", outcome="fail", samples=False) == ["r001"]
    assert "r007" not in ids(filled, samples=False) and "r007" in ids(filled)
