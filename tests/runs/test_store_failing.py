"""What fails among a machine's newest runs, read by the store (``Store.failing``) in every store: each
grade below its run's pass score with its grader's reason, each failed run with its error, newest first,
over the window alone, reasons cut; and, in SQLite, read along the machine's index. Grouped by reason
(``group_failures``): reasons differing only in numbers, quotes, case or spacing are one group, the largest
first, at most ``MAX_GROUPS``."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from machine.runs import (
    RUN_FAILED,
    CriterionScore,
    FailingGrade,
    Run,
    Scorecard,
    SQLiteStore,
    Store,
    Timings,
    group_failures,
    normalised_reason,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def card(grades: dict[str, tuple[float | None, str]], pass_score: float = 1.0) -> Scorecard:
    criteria = {
        name: CriterionScore(criterion=name, weight=1.0, grader=f"check:{name}", score=score, reason=reason)
        for name, (score, reason) in grades.items()
    }
    return Scorecard(criteria=criteria, rubric_fingerprint="f", pass_score=pass_score)


def run(i: int, machine: str = "red", **fields: Any) -> Run:
    return Run(
        id=f"f{i:03d}", machine=machine, model="m", harness="echo", input=f"input {i}",
        timings=Timings(started_at=T0 + timedelta(minutes=i)), **fields,
    )  # fmt: skip


RUNS = [
    run(0, scorecard=card({"c0": (0.0, "expected 3 items, got 5"), "c1": (1.0, "fine")})),
    run(1, scorecard=card({"c0": (0.5, "half right"), "c1": (0.5, "reached")}, pass_score=0.5)),  # no fail
    run(2, status="error", error="the model fell over"),
    run(3, scorecard=card({"c0": (None, "no verdict"), "c1": (0.2, "too long: " + "x" * 2000)})),
    run(4),  # ungraded
    run(5, scorecard=card({"c0": (0.25, "Expected 4 items,   got 7"), "c1": (0.0, "<script>x</script>")})),
    run(6, machine="other", scorecard=card({"c0": (0.0, "elsewhere")})),
]


@pytest.fixture
def filled(store: Store) -> Store:
    store.put_many(RUNS)
    return store


def test_each_failing_grade_and_failed_run_newest_first(filled: Store) -> None:
    found = filled.failing("red")
    assert [(g.run_id, g.criterion, g.score) for g in found] == [
        ("f005", "c0", 0.25),
        ("f005", "c1", 0.0),
        ("f003", "c1", pytest.approx(0.2)),
        ("f002", RUN_FAILED, None),
        ("f000", "c0", 0.0),
    ]
    assert found[0].reason == "Expected 4 items,   got 7" and found[0].grader == "check:c0"
    assert found[1].reason == "<script>x</script>"  # text, as the grader wrote it
    assert found[2].reason.startswith("too long: x") and len(found[2].reason) == 300
    assert found[2].reason.endswith("…")
    assert (found[3].reason, found[3].grader) == ("the model fell over", None)
    assert found[0].created_at == T0 + timedelta(minutes=5)


def test_the_window_holds_only_the_newest_runs(filled: Store) -> None:
    assert [(g.run_id, g.criterion) for g in filled.failing("red", 3)] == [
        ("f005", "c0"),
        ("f005", "c1"),
        ("f003", "c1"),
    ]
    assert filled.failing("nobody") == []
    with pytest.raises(ValueError, match="window 0"):
        filled.failing("red", 0)


def test_each_criterion_has_a_pass_rate_over_its_scored_runs(filled: Store) -> None:
    rates = {c.criterion: (c.scored, c.fails, c.pass_rate) for c in filled.health("red").criteria}
    assert rates == {"c0": (3, 2, pytest.approx(1 / 3)), "c1": (4, 2, pytest.approx(0.5))}


def test_every_failing_statement_walks_the_machine_index(sqlite_store: SQLiteStore) -> None:
    """Neither statement scans the table; each reads the machine's newest runs along ``runs_newest``."""
    sqlite_store.put_many(RUNS)
    with sqlite3.connect(sqlite_store.path) as db:
        for statement in (sqlite_store.sql.failing_grades, sqlite_store.sql.failed_runs):
            steps = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + statement, ["red", 200])]
            assert any("USING INDEX runs_newest" in s for s in steps), (statement, steps)
            assert not any(s.startswith("SCAN runs") for s in steps), (statement, steps)


def test_a_reason_is_normalised_to_the_way_it_fails() -> None:
    assert normalised_reason("Expected 3 items, got 5") == normalised_reason("expected 14 items,  got 0.5")
    assert normalised_reason("Expected 3 items, got 5") == "expected # items, got #"
    assert normalised_reason('missing "Paris" in the answer') == 'missing "…" in the answer'
    assert normalised_reason("missing 'Rome' in the answer") == 'missing "…" in the answer'
    assert normalised_reason("don't stop, it's fine") == "don't stop, it's fine"
    assert normalised_reason("  A\n\tB  ") == "a b"
    assert normalised_reason("") == "(no reason given)"
    assert len(normalised_reason("word " * 100)) == 160


def grade(i: int, criterion: str, reason: str, score: float | None = 0.0) -> FailingGrade:
    at = T0 + timedelta(minutes=i)
    return FailingGrade(
        run_id=f"r{i}", created_at=at, criterion=criterion, score=score, grader="g", reason=reason
    )


def test_failing_grades_are_grouped_by_criterion_and_reason_the_largest_first() -> None:
    grades = [grade(i, "correct", f"expected {i} items, got {i + 1}", 0.1 * (i % 3)) for i in range(6)]
    grades += [grade(10 + i, "brief", "Too long") for i in range(2)]
    grades += [grade(20 + i, "correct", "too long") for i in range(2)]  # another criterion's reason
    grades += [grade(30, RUN_FAILED, "the model fell over", None)]
    grades.sort(key=lambda g: g.created_at, reverse=True)
    found = group_failures(grades)
    assert [(g.criterion, g.count) for g in found.groups] == [
        ("correct", 6), ("correct", 2), ("brief", 2), (RUN_FAILED, 1),
    ]  # fmt: skip
    first = found.groups[0]
    assert first.reason == "expected 5 items, got 6"  # the newest's words
    assert first.run_ids == ["r5", "r4", "r3", "r2", "r1"]  # the newest five
    assert first.mean == pytest.approx(sum(0.1 * (i % 3) for i in range(6)) / 6)
    assert first.newest == T0 + timedelta(minutes=5)
    assert found.groups[3].mean is None
    assert (found.failing, found.left_out, found.left_out_groups) == (11, 0, 0)


def test_only_the_largest_groups_are_listed_and_the_rest_counted() -> None:
    grades = [grade(i, f"c{i % 25}", "wrong") for i in range(30)]
    found = group_failures(grades, most=20)
    assert len(found.groups) == 20 and [g.count for g in found.groups[:5]] == [2] * 5
    assert (found.failing, found.left_out, found.left_out_groups) == (30, 5, 5)
