"""The scorecard's arithmetic at its edges: a score exactly at the pass score passes (and a rounding error
below it too), anything further below fails; UNSCORED criteria are left out of the mean whatever their
weight; weights weigh; nothing scored, or weights summing to nothing, gives no score and no verdict."""

from __future__ import annotations

import pytest

from machine import CriterionScore, Scorecard
from machine.runs._records import PASS_TOLERANCE, passes, verdict, weighted_score


def grade(name: str, value: float | None, weight: float = 1.0, cost: float = 0.0) -> CriterionScore:
    return CriterionScore(
        criterion=name, weight=weight, grader="check:x", score=value, reason="why", cost_usd=cost
    )


def card(*grades: CriterionScore, pass_score: float = 1.0) -> Scorecard:
    return Scorecard(rubric_fingerprint="f", criteria={g.criterion: g for g in grades}, pass_score=pass_score)


@pytest.mark.parametrize("pass_score", [0.0, 0.25, 0.5, 0.7, 0.75, 1.0])
def test_a_score_exactly_at_the_pass_score_passes(pass_score: float) -> None:
    assert passes(pass_score, pass_score) is True
    assert passes(pass_score - PASS_TOLERANCE, pass_score) is True  # the edge of the tolerance is inside
    assert passes(pass_score - 2 * PASS_TOLERANCE, pass_score) is False
    assert passes(pass_score - 1e-6, pass_score) is False
    assert passes(min(1.0, pass_score + 1e-6), pass_score) is True


def test_a_mean_a_rounding_error_below_the_pass_score_passes() -> None:
    """0.7 three times averages to 0.6999999999999998 in floating point: still a pass at 0.7."""
    sc = card(grade("a", 0.7), grade("b", 0.7), grade("c", 0.7), pass_score=0.7)
    assert sc.score is not None and sc.score < 0.7
    assert sc.passed is True
    assert card(grade("a", 0.1), grade("b", 0.2), pass_score=0.15).passed is True


def test_the_boundary_on_a_weighted_card() -> None:
    at = [grade("a", 1.0, 3), grade("b", 0.0, 1)]  # 0.75 exactly
    assert card(*at, pass_score=0.75).passed is True
    assert card(*at, pass_score=0.75 + 1e-6).passed is False
    assert card(*at, pass_score=0.75 - 1e-6).passed is True
    assert card(*at).passed is False  # the default pass score is a full score


def test_unscored_criteria_are_left_out_whatever_their_weight() -> None:
    for weight in (0.0, 1.0, 1000.0):
        sc = card(grade("a", 1.0), grade("b", 0.5), grade("gone", None, weight))
        assert sc.score == pytest.approx(0.75)
        assert sc.unscored == ["gone"]
    assert card(grade("a", 1.0), grade("gone", None, 50)).score == 1.0  # unscored is not zero
    assert card(grade("a", 0.0), grade("gone", None, 50), pass_score=0.0).passed is True


def test_a_pass_is_claimed_only_where_the_unscored_criteria_could_not_take_it_away() -> None:
    """passed is None (undecided) while the UNSCORED weight could turn the verdict: a pass needs the pass
    score with every UNSCORED criterion at 0, a fail stands when full marks on them could not reach it."""
    full = [grade("answers", 1.0, 2), grade("honest", None, 3), grade("short", None, 1)]
    assert card(*full).score == 1.0 and card(*full).passed is None  # the run: not a PASS
    assert card(*full, pass_score=1 / 3).passed is True  # 2 of 6 weight at 1.0 is a third even if both fail
    assert card(*full, pass_score=0.34).passed is None
    low = [grade("answers", 0.5, 2), grade("honest", None, 3), grade("short", None, 1)]
    assert card(*low).passed is False  # (1 + 4) / 6 at best: no mark on the others could reach 1
    assert card(*low, pass_score=5 / 6).passed is None  # full marks on both would reach it exactly
    assert card(*low, pass_score=5 / 6 + 1e-6).passed is False
    assert card(grade("a", 1.0), grade("gone", None, 0)).passed is True  # no weight: it cannot turn it
    assert card(*full).model_dump(mode="json")["passed"] is None


def test_passed_at_judges_the_same_grades_at_another_pass_score() -> None:
    sc = card(grade("a", 1.0, 3), grade("b", None, 1))
    assert (sc.passed_at(1.0), sc.passed_at(0.75), sc.passed_at(0.76)) == (None, True, None)
    assert sc.weights == (3.0, 4.0)


def test_weights_weigh() -> None:
    assert card(grade("a", 1.0, 1), grade("b", 0.0, 1)).score == pytest.approx(0.5)
    assert card(grade("a", 1.0, 3), grade("b", 0.0, 1)).score == pytest.approx(0.75)
    assert card(grade("a", 1.0, 1), grade("b", 0.0, 3)).score == pytest.approx(0.25)
    assert card(grade("a", 0.4, 2), grade("b", 0.9, 0.5)).score == pytest.approx((0.8 + 0.45) / 2.5)
    assert card(grade("a", 0.2, 1), grade("b", 1.0, 0)).score == pytest.approx(0.2)  # weight 0 counts nothing
    assert card(grade("only", 0.3, 7)).score == pytest.approx(0.3)


def test_nothing_scored_or_no_weight_gives_no_score_and_no_verdict() -> None:
    for sc in (
        card(),
        card(grade("a", None), grade("b", None)),
        card(grade("a", 1.0, 0), grade("b", 0.0, 0)),
    ):
        assert sc.score is None
        assert sc.passed is None
    assert weighted_score([]) is None
    assert weighted_score([grade("a", 0.5, 0), grade("b", None, 2)]) is None
    assert verdict(None, 0.0) is None
    assert verdict(0.0, 0.0) is True and verdict(0.0, 0.5) is False


def test_a_zero_score_is_a_score() -> None:
    sc = card(grade("a", 0.0), grade("b", 0.0))
    assert sc.score == 0.0 and sc.passed is False
    assert card(grade("a", 0.0), pass_score=0.0).passed is True


def test_cost_and_unscored_list_every_criterion_in_order() -> None:
    sc = card(grade("a", None, cost=0.25), grade("b", 1.0, cost=0.5), grade("c", None, cost=0.125))
    assert sc.unscored == ["a", "c"]
    assert sc.cost_usd == pytest.approx(0.875)
    assert card().cost_usd == 0.0


def test_the_verdict_follows_a_new_pass_score_and_survives_a_dump() -> None:
    sc = card(grade("a", 0.5), grade("b", 1.0))
    assert sc.passed is False
    lowered = sc.with_pass_score(0.75)
    assert lowered.passed is True and lowered.pass_score == 0.75 and sc.pass_score == 1.0
    dumped = lowered.model_dump(mode="json")
    assert dumped["score"] == pytest.approx(0.75) and dumped["passed"] is True
    assert Scorecard.model_validate(dumped).passed is True
