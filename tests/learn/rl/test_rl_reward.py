"""The reward of a sampled run is the rubric's weighted sum over every criterion, an UNSCORED one counting
0, never the run's score (which leaves it out, and would reward making a hard judge fail); a run with
nothing scored has no reward and carries no gradient; a failed run is 0."""

from __future__ import annotations

import pytest

from machine import BadInputError, define_rubric
from machine.learn.rl import Reward, group_of, reward_of, step_stats
from machine.runs import CriterionScore, Run, Scorecard

RUBRIC = define_rubric(
    {
        "right": {"description": "The answer is right.", "weight": 2},
        "brief": "The reply is short.",
        "kind": "The reply is kind.",
    }
)


def sampled(scores: dict[str, float | None] | None, *, status: str = "ok", case: str = "c1") -> Run:
    """A run of ``case`` graded ``scores`` under RUBRIC (None: not graded at all)."""
    card = None
    if scores is not None:
        card = Scorecard(
            rubric_fingerprint=RUBRIC.fingerprint,
            criteria={
                name: CriterionScore(
                    criterion=name, weight=RUBRIC[name].weight, grader="check:x", score=score
                )
                for name, score in scores.items()
            },
        )
    return Run(
        machine="m",
        model="local:tiny",
        harness="local",
        input="q",
        status=status,
        case_id=case,
        scorecard=card,
    )


def test_every_criterion_weighs_in_at_the_rubrics_weights() -> None:
    reward = reward_of(sampled({"right": 1.0, "brief": 0.5, "kind": 0.0}), RUBRIC)
    assert reward.reward == pytest.approx((2 * 1.0 + 0.5 + 0.0) / 4)
    assert reward.unscored == [] and not reward.failed


def test_an_unscored_criterion_counts_zero_not_out() -> None:
    run = sampled({"right": 1.0, "brief": 1.0, "kind": None})
    reward = reward_of(run, RUBRIC)
    assert run.scorecard is not None and run.scorecard.score == 1.0  # the score leaves "kind" out
    assert reward.reward == pytest.approx(3 / 4)  # the reward counts it 0
    assert reward.unscored == ["kind"]
    assert reward.scores == {"right": 1.0, "brief": 1.0, "kind": None}


def test_a_wholly_unscored_run_has_no_reward_no_gradient_and_is_counted() -> None:
    none = reward_of(sampled({"right": None, "brief": None, "kind": None}), RUBRIC)
    ungraded = reward_of(sampled(None), RUBRIC)
    assert none.reward is None and none.no_signal and none.unscored == ["right", "brief", "kind"]
    assert ungraded.reward is None and ungraded.scores == {"right": None, "brief": None, "kind": None}
    scored = [reward_of(sampled({"right": s, "brief": s, "kind": s}), RUBRIC) for s in (1.0, 0.0)]
    group = group_of([*scored, none, ungraded])
    assert group.advantages == [0.5, -0.5, None, None]  # left out of the mean, and of the gradient
    assert [r.run_id for r, _ in group.trained] == [r.run_id for r in scored]
    stats = step_stats([group])
    assert (stats.unscored, stats.trained, stats.rollouts, stats.mean_reward) == (2, 2, 4, 0.5)


def test_a_failed_run_is_zero_whatever_was_graded() -> None:
    reward = reward_of(sampled({"right": 1.0, "brief": 1.0, "kind": 1.0}, status="error"), RUBRIC)
    assert reward.reward == 0.0 and reward.failed
    assert reward_of(sampled(None, status="error"), RUBRIC).reward == 0.0
    stats = step_stats([group_of([reward, reward_of(sampled(None), RUBRIC)])])
    assert (stats.failed, stats.unscored) == (1, 1)


def test_a_run_graded_under_another_rubric_is_refused() -> None:
    other = define_rubric({"right": "Something else."})
    with pytest.raises(BadInputError, match="graded under another rubric"):
        reward_of(sampled({"right": 1.0, "brief": 1.0, "kind": 1.0}), other)


def test_the_reward_keeps_the_run_and_its_case() -> None:
    run = sampled({"right": 0.0, "brief": 1.0, "kind": 1.0}, case="c7")
    reward = reward_of(run, RUBRIC)
    assert isinstance(reward, Reward)
    assert (reward.run_id, reward.case_id, reward.reward) == (run.id, "c7", 0.5)
