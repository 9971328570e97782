"""The promotion gate at its edges, on runs built in the test: what each side counts (a failed run as a
0 of its side, runs with nothing scored apart, a criterion UNSCORED before a scored one), each
criterion's figures when it never passes or is always scored, a side scored on too few of the cases,
the decision's reason at each boundary (no case, one case, too few cases that changed, standard error 0,
the z threshold), and a report that keeps the stop, the threshold and the absence of a paired
comparison."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from machine import check, define_evaluator, define_machine, define_rubric
from machine.measure.stats import Paired
from machine.runs import CriterionScore, Run, Scorecard
from machine.spec import Case, GateReport, Machine, Version
from machine.versions import SideTally, gate, measured
from machine.versions._gate import tally_for  # an empty tally, as propose makes it

CASES = [Case(id=c, input=c) for c in ("ann", "bob", "cat")]
WEIGHTS = {"correct": 1.0, "faithful": 3.0}
LIVE = Version(number=1, status="live", model="bad", instructions_sha="a", rubric="r", files={})
CANDIDATE = Version(number=2, status="pending", model="good", instructions_sha="b", rubric="r", files={})


def spec() -> Machine:
    rubric = define_rubric({name: {"description": name, "weight": w} for name, w in WEIGHTS.items()})
    graders = {name: check(name, lambda r: True) for name in WEIGHTS}
    return define_machine(
        name="caps",
        intent="Shout.",
        instructions="Shout the input.",
        model="bad",
        rubric=rubric,
        evaluator=define_evaluator(rubric, graders),
    )


def run(case: str, grades: Mapping[str, float | None] | None, *, error: bool = False) -> Run:
    """A run of ``case`` graded ``grades`` (criterion -> score, None for UNSCORED, in that order); no
    scorecard when ``grades`` is None."""
    card = None
    if grades is not None:
        criteria = {
            name: CriterionScore(
                criterion=name,
                weight=WEIGHTS[name],
                grader="check",
                score=score,
                reason="" if score is not None else f"{name} could not be graded",
            )
            for name, score in grades.items()
        }
        card = Scorecard(rubric_fingerprint="r", criteria=criteria)
    status = "error" if error else "ok"
    return Run(
        machine="caps", model="m", harness="h", input=case, case_id=case, status=status, scorecard=card
    )


def tally(version: Version, runs: list[Run]) -> SideTally:
    side = tally_for(version)
    for r in runs:
        side.add(r, how="new", pass_score=1.0)
    return side


def report(
    live: list[Run],
    candidate: list[Run],
    *,
    min_z: float = 2.0,
    stopped: str | None = None,
    cases: list[Case] = CASES,
) -> GateReport:
    sides = {"v1": tally(LIVE, live), "v2": tally(CANDIDATE, candidate)}
    return measured(spec(), LIVE, CANDIDATE, sides, cases, "holdout.json", 1, min_z, stopped)


BOTH_RIGHT = {"correct": 1.0, "faithful": 1.0}
BOTH_WRONG = {"correct": 0.0, "faithful": 0.0}


def test_a_failed_run_is_a_zero_of_its_side_not_unscored_nor_left_out() -> None:
    side = tally(LIVE, [run("ann", None, error=True), run("bob", BOTH_RIGHT, error=True)])
    side.finish(CASES)
    f = side.figures
    assert (f.runs, f.new, f.errors, f.unscored) == (2, 2, 2, 0)
    assert side.scores == {"ann": [0.0], "bob": [0.0]} and side.scored == 2 and side.failed == 2
    assert (f.mean, f.pass_rate, f.cases_scored) == (0.0, 0.0, 2)


def test_runs_with_nothing_scored_are_each_counted_unscored_and_left_out() -> None:
    nothing = {"correct": None, "faithful": None}
    side = tally(LIVE, [run("ann", None), run("bob", nothing), run("cat", BOTH_RIGHT)])
    side.finish(CASES)
    f = side.figures
    assert (f.runs, f.errors, f.unscored, f.unscored_grades) == (3, 0, 2, 2)
    assert side.scores == {"cat": [1.0]} and (f.mean, f.pass_rate, f.cases_scored) == (1.0, 1.0, 1)
    assert side.criteria_unscored == {}  # a run with no score is not counted per criterion


def test_a_criterion_unscored_before_a_scored_one_still_lets_the_scored_one_count() -> None:
    side = tally(LIVE, [run("ann", {"faithful": None, "correct": 1.0})])
    assert side.criteria == {"correct": [1.0]} and side.criteria_passes == {"correct": 1}
    assert side.criteria_unscored == {"faithful": 1}
    assert side.criteria_reasons == {"faithful": ["faithful could not be graded"]}


def test_criterion_figures_of_one_always_scored_and_never_passing() -> None:
    live = [run(c, BOTH_WRONG) for c in ("ann", "bob")]
    candidate = [run(c, {"correct": 1.0, "faithful": 0.5}) for c in ("ann", "bob")]
    correct, faithful = (report(live, candidate).criteria[name] for name in ("correct", "faithful"))
    assert (correct.unscored_before, correct.unscored_after) == (0, 0)
    assert (correct.before_pass_rate, correct.after_pass_rate) == (0.0, 1.0)
    assert (faithful.before, faithful.after) == (0.0, 0.5)
    assert (faithful.before_pass_rate, faithful.after_pass_rate) == (0.0, 0.0)
    assert faithful.weight == 3.0


def test_a_side_whose_every_run_failed_is_measured_failing_every_criterion() -> None:
    live = [run(c, BOTH_RIGHT) for c in ("ann", "bob", "cat")]
    candidate = [run(c, None, error=True) for c in ("ann", "bob", "cat")]
    got = report(live, candidate)
    assert (got.outcome, got.diff, got.paired_cases, got.after.errors) == ("not passed", -1.0, 3, 3)
    assert (got.criteria["correct"].after, got.criteria["faithful"].after_pass_rate) == (0.0, 0.0)
    assert got.unmeasured == {}


def test_a_side_with_no_scored_run_gives_no_paired_comparison() -> None:
    live = [run("ann", BOTH_RIGHT), run("bob", BOTH_WRONG)]
    candidate = [run("ann", None), run("bob", None)]  # finished, but never graded
    got = report(live, candidate)
    assert (got.diff, got.se, got.z, got.paired_cases) == (None, None, None, 0)
    assert got.outcome == "not measured"
    # neither criterion was graded on the candidate's side: said as such, for both, joined by "; "
    assert got.decision.startswith(
        "criterion 'correct' has no scored grade on candidate v2 (no run graded); "
        "criterion 'faithful' has no scored grade on candidate v2 (no run graded): "
        "the gate cannot judge the candidate on what it did not measure; "
        "make the grader score (the report lists why it did not) and propose again"
    )
    assert got.decision.endswith("propose again")  # not stopped, so nothing more is said


def test_a_criterion_unmeasured_on_both_sides_names_both() -> None:
    grades = {"correct": 1.0, "faithful": None}
    got = report([run("ann", grades)], [run("ann", grades), run("bob", grades)])
    assert got.unmeasured == {"faithful": ["live v1", "candidate v2"]}
    assert got.decision.startswith(
        "criterion 'faithful' has no scored grade on live v1 (1 UNSCORED) nor on candidate v2 (2 UNSCORED): "
    )


def test_a_criterion_scored_on_too_few_cases_of_a_side_is_not_measured_there() -> None:
    live = [run(c, BOTH_RIGHT) for c in ("ann", "bob", "cat")]
    candidate = [
        run("ann", BOTH_RIGHT),
        *(run(c, {"correct": 1.0, "faithful": None}) for c in ("bob", "cat")),
    ]
    got = report(live, candidate)
    faithful = got.criteria["faithful"]
    assert (faithful.cases_before, faithful.cases_after, faithful.after) == (3, 1, 1.0)
    assert got.unmeasured == {"faithful": ["candidate v2"]} and got.outcome == "not measured"
    assert got.decision.startswith(
        "criterion 'faithful' was scored on only 1 of the 3 held-out cases on candidate v2 (2 UNSCORED; at "
        "least 3 needed): the gate cannot judge the candidate on what it did not measure"
    )
    # on a side scored on too few of the cases itself, the side is named, not each criterion
    short = report(live, [run("ann", BOTH_RIGHT), run("bob", {"correct": 1.0, "faithful": None})])
    assert short.unmeasured == {} and short.decision.startswith("candidate v2 has a scored run on only 2 of")


def test_cases_scored_on_one_side_only_are_not_paired() -> None:
    five = [Case(id=c, input=c) for c in ("ann", "bob", "cat", "dan", "eve")]
    live = [run(c, BOTH_WRONG) for c in ("ann", "bob", "cat", "dan")]
    candidate = [run(c, BOTH_RIGHT) for c in ("bob", "cat", "dan", "eve")]
    got = report(live, candidate, cases=five)
    assert (got.paired_cases, got.up, got.down) == (3, 3, 0)
    assert (got.before.cases_scored, got.after.cases_scored) == (4, 4)  # 4 of 5: enough (80%)


def test_a_side_scored_on_too_few_of_the_cases_is_not_measured() -> None:
    live = [run("ann", BOTH_RIGHT)]
    candidate = [run("bob", BOTH_RIGHT), run("cat", BOTH_RIGHT)]
    got = report(live, candidate)
    assert (got.diff, got.se, got.z, got.paired_cases) == (None, None, None, 0)
    assert got.outcome == "not measured"
    assert got.decision.startswith(
        "live v1 has a scored run on only 1 of the 3 held-out cases (at least 3 needed); candidate v2 has a "
        "scored run on only 2 of the 3 held-out cases (at least 3 needed): the gate cannot judge a side on "
        "the few cases that were scored"
    )


def test_the_report_keeps_the_stop_and_the_threshold() -> None:
    live = [run(c, BOTH_WRONG) for c in ("ann", "bob", "cat")]
    candidate = [run(c, BOTH_RIGHT) for c in ("ann", "bob", "cat")]
    clear = report(live, candidate, min_z=3.5)
    # three cases that each rose from 0 to 1: a standard error of 0, and still not evidence
    assert (clear.outcome, clear.min_z, clear.stopped) == ("not enough evidence", 3.5, None)
    assert (clear.diff, clear.se, clear.paired_cases, clear.up, clear.p_value) == (1.0, 0.0, 3, 3, 0.125)
    cut = report(live, candidate, min_z=3.5, stopped="the budget of $1.00 is spent")
    assert (cut.outcome, cut.passed, cut.stopped) == ("not passed", False, "the budget of $1.00 is spent")
    assert "stopped early (the budget of $1.00 is spent)" in cut.decision


def paired(diff: float, se: float, cases: int, up: int | None = None, down: int = 0) -> Paired:
    """A comparison of ``cases``; by default every case moved the way ``diff`` did."""
    rose = (cases if diff > 0 else 0) if up is None else up
    return Paired(diff=diff, se=se, z=diff / se if se else None, cases=cases, up=rose, down=down)


NOTHING = "no held-out case has scored runs of both versions, so there is nothing to compare"


@pytest.mark.parametrize(
    ("comparison", "outcome", "reason"),
    [
        (None, "not passed", NOTHING),
        (paired(0.0, 0.0, 0), "not passed", NOTHING),
        (
            paired(0.5, 0.0, 1),
            "not enough evidence",
            "only one held-out case has scored runs of both versions: no standard error to judge by; "
            "add held-out cases",
        ),
        (  # the two-case pass: two cases that each rose, standard error 0
            paired(1.0, 0.0, 2),
            "not enough evidence",
            "only 2 of the 2 held-out cases changed (2 up, 0 down): an exact sign test over the 2 that "
            "changed gives p 0.25, and it takes 6 that changed to reach p 0.0228 (min_z 2); add held-out "
            "cases that tell the versions apart",
        ),
        (
            paired(0.25, 0.0, 6),
            "passed",
            "every one of the 6 held-out cases scored +0.250 higher (standard error 0): an exact sign "
            "test over the 6 that changed gives p 0.0156 (at most 0.0228 needed)",
        ),
        (  # a large z on few cases that changed is not enough either
            paired(0.5, 0.1, 9, up=3),
            "not enough evidence",
            "only 3 of the 9 held-out cases changed (3 up, 0 down): an exact sign test over the 3 that "
            "changed gives p 0.125, and it takes 6 that changed to reach p 0.0228 (min_z 2); add held-out "
            "cases that tell the versions apart",
        ),
        (
            paired(0.0, 0.1, 5),
            "not passed",
            "the candidate's mean is not higher (difference +0.000 over 5 cases)",
        ),
        (  # enough cases changed: z decides, and the sign test's p is reported
            paired(0.5, 0.25, 8, up=7, down=1),
            "passed",
            "the candidate scored +0.500 higher, 2.00 standard errors above zero (at least 2 needed); an "
            "exact sign test over the 8 that changed gives p 0.0352",
        ),
        (
            paired(0.5, 0.2501, 5),
            "not passed",
            "the candidate scored +0.500 higher, only 2.00 standard errors above zero (2 needed): "
            "not evidence that it is better",
        ),
    ],
)
def test_each_boundary_of_the_gate_and_its_reason(
    comparison: Paired | None, outcome: str, reason: str
) -> None:
    assert gate(comparison, 2.0, None) == (outcome, reason)


def test_an_unmeasured_decision_mentions_a_stop_only_when_there_was_one() -> None:
    strong = paired(0.5, 0.1, 5)
    alone = gate(strong, 2.0, None, ["criterion 'x' has no scored grade on live v1 (no run graded)"])[1]
    assert alone.endswith("and propose again") and "stopped" not in alone
    both = gate(strong, 2.0, "cancelled", ["a", "b"])[1]
    assert both.startswith("a; b: the gate cannot judge")
    assert both.endswith("propose again; the comparison also stopped early (cancelled)")


def test_a_gain_of_exactly_min_z_standard_errors_passes_though_its_z_rounds_short() -> None:
    """0.3 / 0.1 is 2.9999999999999996 in floating point: the gain is 3 standard errors, and passes at 3."""
    assert 0.3 / 0.1 < 3
    assert gate(paired(0.3, 0.1, 10), 3.0, None)[0] == "passed"  # 10 cases changed: enough at min_z 3
    assert gate(paired(0.3, 0.1000001, 10), 3.0, None)[0] == "not passed"
