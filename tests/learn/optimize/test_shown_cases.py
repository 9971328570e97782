"""The failures each proposal is shown: failing and passing cases from the scored runs, and a different
sample of them per proposal wherever there are enough to go round, the same again for the same seed."""

from __future__ import annotations

from machine import Case, CriterionScore, Run, Scorecard
from machine.learn.optimize._brief import Example
from machine.learn.optimize._shown_cases import examples, samples


def run(case: str, score: float | None, *, status: str = "ok", second: int = 0) -> Run:
    made = Run(machine="m", model="x", harness="h", input=case, case_id=case, status=status)
    made.timings.started_at = made.timings.started_at.replace(second=second)
    if score is not None or status == "ok":
        grade = CriterionScore(criterion="c", weight=1, grader="check:c", score=score, reason="why")
        made.scorecard = Scorecard(rubric_fingerprint="f", criteria={"c": grade})
    return made


def failures(n: int) -> list[Example]:
    return [Example(Case(id=f"f{i}", input=f"f{i}"), run(f"f{i}", 0.0), 1, 0) for i in range(n)]


def passes(n: int) -> list[Example]:
    return [Example(Case(id=f"p{i}", input=f"p{i}"), run(f"p{i}", 1.0), 1, 1) for i in range(n)]


def ids(sample: list[Example]) -> list[str]:
    return [e.case.id for e in sample]


def test_each_proposal_is_shown_different_failures_when_there_are_enough() -> None:
    dealt = samples(failures(8), passes(4), 2, shown=4, passes_shown=2, seed="0:1")
    (first, good1), (second, good2) = dealt
    assert len(first) == len(second) == 4
    assert set(ids(first)).isdisjoint(ids(second))
    assert set(ids(first)) | set(ids(second)) == {f"f{i}" for i in range(8)}
    assert set(ids(good1)).isdisjoint(ids(good2)) and len(good1) == len(good2) == 2


def test_fewer_failures_than_a_sample_start_at_different_places() -> None:
    dealt = samples(failures(5), [], 3, shown=4, passes_shown=2, seed="s")
    starts = [ids(sample)[0] for sample, _ in dealt]
    assert len(set(starts)) == 3  # each begins at another failure
    assert all(len(set(ids(sample))) == 4 and good == [] for sample, good in dealt)


def test_too_few_to_go_round_are_all_shown_to_each() -> None:
    dealt = samples(failures(2), passes(1), 3, shown=4, passes_shown=2, seed="s")
    assert [sorted(ids(sample)) for sample, _ in dealt] == [["f0", "f1"]] * 3
    assert [ids(good) for _, good in dealt] == [["p0"]] * 3


def test_the_same_seed_deals_the_same_and_another_seed_shuffles() -> None:
    deal = [ids(s) for s, _ in samples(failures(12), [], 3, shown=4, passes_shown=0, seed="7:1")]
    again = [ids(s) for s, _ in samples(failures(12), [], 3, shown=4, passes_shown=0, seed="7:1")]
    assert deal == again
    others = [
        [ids(s) for s, _ in samples(failures(12), [], 3, shown=4, passes_shown=0, seed=f"7:{n}")]
        for n in range(2, 6)
    ]
    assert any(other != deal for other in others)


def test_examples_split_failing_from_passing_and_leave_out_what_was_not_scored() -> None:
    cases = [Case(id=c, input=c) for c in ("mixed", "good", "failed", "unscored", "none")]
    graded = {
        "mixed": [run("mixed", 1.0, second=1), run("mixed", 0.5, second=2), run("mixed", 0.0, second=3)],
        "good": [run("good", 1.0, second=1), run("good", 1.0, second=2)],
        "failed": [run("failed", None, status="error")],
        "unscored": [run("unscored", None)],
    }
    failing, passing = examples(graded, cases, pass_score=1.0)
    assert [(e.case.id, e.trials, e.passed, e.run.score) for e in failing] == [("mixed", 3, 1, 0.0)]
    assert [(e.case.id, e.trials, e.passed) for e in passing] == [("good", 2, 2)]
    assert passing[0].run is graded["good"][1]  # the best run, the latest of equals
    failing, passing = examples(graded, cases, pass_score=0.5)
    assert [(e.case.id, e.passed) for e in failing] == [("mixed", 2)]
