"""How a machine is doing at a glance, summed by the store (``Store.health``) in every store: over its
newest runs only, a failed run a 0 and a fail, unscored runs counted apart, the pass rate over decided
runs, each criterion's fails, a trend of earlier windows; and, in SQLite, read along the machine's index."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from machine.runs import CriterionScore, Run, Scorecard, SQLiteStore, Store, Timings

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def card(first: float | None, second: float | None, pass_score: float = 1.0) -> Scorecard:
    grades = {
        name: CriterionScore(criterion=name, weight=1.0, grader="g", score=score)
        for name, score in (("c0", first), ("c1", second))
    }
    return Scorecard(criteria=grades, rubric_fingerprint="f", pass_score=pass_score)


def run(i: int, machine: str = "red", **fields: Any) -> Run:
    started = T0 + timedelta(minutes=i)
    return Run(
        id=f"h{i:03d}",
        machine=machine,
        model="m",
        harness="echo",
        input=f"input {i}",
        cost_usd=0.001 * (i + 1),
        timings=Timings(started_at=started),
        **fields,
    )


RUNS = [
    run(0, scorecard=card(1.0, 1.0)),  # a pass
    run(1, scorecard=card(0.0, 1.0)),  # 0.5, a fail: c0 fails
    run(2, scorecard=card(0.5, 0.0, pass_score=0.5)),  # 0.25, a fail: c1 fails, c0 reaches 0.5
    run(3, status="error", error="boom"),  # 0 and a fail
    run(4, scorecard=card(1.0, None)),  # 1.0, undecided: c1 could still fail it
    run(5),  # ungraded
    run(6, scorecard=card(None, None)),  # graded, nothing scored
    run(7, scorecard=card(1.0, 0.0)),  # 0.5, a fail: c1 fails
    run(8, machine="other", scorecard=card(0.0, 0.0)),
]


@pytest.fixture
def filled(store: Store) -> Store:
    store.put_many(RUNS)
    return store


def test_the_figures_of_every_run_of_a_machine(filled: Store) -> None:
    health = filled.health("red")
    assert (health.window, health.runs, health.errors, health.scored) == (200, 8, 1, 5)
    assert (health.unscored, health.ungraded) == (2, 1)  # run 5 ungraded, run 6 with nothing scored
    assert (health.passes, health.fails) == (1, 4)  # run 4 is neither; the failed run is a fail
    assert health.pass_rate == pytest.approx(1 / 5)
    assert health.mean == pytest.approx((1.0 + 0.5 + 0.25 + 0.0 + 1.0 + 0.5) / 6)
    assert health.unscored_share == pytest.approx(2 / 8)
    assert health.spent_usd == pytest.approx(0.001 * sum(range(1, 9)))
    assert health.newest == T0 + timedelta(minutes=7)
    assert health.trend == [pytest.approx(health.mean)]  # one window
    c1, c0 = health.criteria
    assert (c1.criterion, c1.scored, c1.unscored, c1.fails) == ("c1", 4, 2, 2)
    assert c1.mean == pytest.approx(0.5)
    assert (c0.criterion, c0.scored, c0.unscored, c0.fails) == ("c0", 5, 1, 1)
    assert c0.mean == pytest.approx(0.7)
    assert health.worst == c1
    dumped = health.model_dump(mode="json")
    assert dumped["pass_rate"] == pytest.approx(0.2) and dumped["worst"]["criterion"] == "c1"


def test_the_window_holds_only_the_newest_runs_and_the_trend_goes_back_window_by_window(
    filled: Store,
) -> None:
    health = filled.health("red", 3)  # runs 7, 6 and 5
    assert (health.runs, health.errors, health.scored, health.unscored, health.ungraded) == (3, 0, 1, 2, 1)
    assert (health.passes, health.fails, health.mean) == (0, 1, 0.5)
    assert health.spent_usd == pytest.approx(0.008 + 0.007 + 0.006)
    assert [(c.criterion, c.fails) for c in health.criteria] == [("c1", 1), ("c0", 0)]
    # windows of 3, oldest first: runs 0-1 (1.0, 0.5), 2-4 (0.25, a failed 0, 1.0), 5-7 (0.5)
    assert health.trend == [pytest.approx(0.75), pytest.approx(1.25 / 3), pytest.approx(0.5)]


def test_a_machine_without_runs_or_without_a_failing_criterion(filled: Store) -> None:
    nobody = filled.health("nobody")
    assert (nobody.runs, nobody.mean, nobody.pass_rate, nobody.unscored_share) == (0, None, None, None)
    assert (nobody.trend, nobody.criteria, nobody.worst, nobody.newest) == ([], [], None, None)
    filled.put_many([run(20, machine="fine", scorecard=card(1.0, 1.0))])
    fine = filled.health("fine")
    assert (fine.pass_rate, fine.worst, [c.fails for c in fine.criteria]) == (1.0, None, [0, 0])
    with pytest.raises(ValueError, match="window 0"):
        filled.health("red", 0)


def test_the_samples_of_an_rl_training_are_not_the_machines_own_runs(filled: Store) -> None:
    """Newer than every run of red, failing on c0: left out of its figures and its failures alike."""
    before = filled.health("red", 3)
    filled.put_many([run(30 + i, scorecard=card(0.0, 1.0), sampled_for=f"t step {i}") for i in range(3)])
    after = filled.health("red", 3)
    assert after.model_dump() == before.model_dump()
    assert all(not g.run_id.startswith("h03") for g in filled.failing("red", 3))


def test_every_statement_walks_the_machine_index(sqlite_store: SQLiteStore) -> None:
    """No statement scans the table: each reads the machine's newest runs along ``runs_newest``."""
    store = sqlite_store
    store.put_many(RUNS)
    statements = [
        (store.sql.health, ["red", 200]),
        (store.sql.health_criteria, ["red", 200]),
        (store.sql.health_trend, [200, "red", 1600]),
    ]
    with sqlite3.connect(store.path) as db:
        for statement, params in statements:
            steps = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + statement, params)]
            assert any("USING INDEX runs_newest" in s for s in steps), (statement, steps)
            assert not any(s.startswith("SCAN runs") for s in steps), (statement, steps)
