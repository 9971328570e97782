"""Groups and advantages: a run's advantage is its reward minus its group's mean (divided by the group's
spread only when asked); a group whose rewards are all equal gives no gradient and is counted as flat; a
step's statistics say what its rollouts did."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from machine.learn.rl import Group, Reward, group_of, groups_of, step_stats
from machine.learn.rl._groups import STD_EPSILON


def reward(value: float | None, case: str = "c1") -> Reward:
    scores = {"right": value}
    return Reward(run_id=f"r{id(scores)}", case_id=case, reward=value, scores=scores)


def test_advantages_are_centred_on_the_groups_mean() -> None:
    group = group_of([reward(1.0), reward(0.0), reward(0.5), reward(0.5)])
    assert group.mean == 0.5 and not group.flat
    assert group.advantages == [0.5, -0.5, 0.0, 0.0]
    assert sum(a for _, a in group.trained) == pytest.approx(0.0)


def test_scaling_divides_by_the_groups_standard_deviation_only_when_asked() -> None:
    values = [1.0, 0.0, 0.0, 0.25]
    plain = group_of([reward(v) for v in values])
    scaled = group_of([reward(v) for v in values], scale_rewards=True)
    mean, spread = statistics.mean(values), statistics.stdev(values) + STD_EPSILON
    assert plain.advantages == pytest.approx([v - mean for v in values])
    assert scaled.advantages == pytest.approx([(v - mean) / spread for v in values])


def test_a_group_of_equal_rewards_is_flat_and_gives_no_gradient() -> None:
    for values in ([1.0, 1.0, 1.0, 1.0], [0.0, 0.0], [0.5, None, 0.5], [0.7, None], [None, None]):
        group = group_of([reward(v) for v in values])
        assert group.flat, values
        assert group.advantages == [None] * len(values)
        assert group.trained == []
    assert group_of([reward(v) for v in (0.3, 0.3)], scale_rewards=True).advantages == [None, None]


def test_a_run_without_a_reward_is_left_out_of_the_mean() -> None:
    group = group_of([reward(1.0), reward(None), reward(0.0), reward(0.5)])
    assert group.mean == pytest.approx(0.5)
    assert group.advantages == pytest.approx([0.5, None, -0.5, 0.0])


def test_runs_group_by_their_case_in_the_order_cases_come() -> None:
    rewards = [reward(1.0, "b"), reward(0.0, "a"), reward(0.0, "b"), reward(0.0, "a"), reward(1.0, None)]
    groups = groups_of(rewards)
    assert [(g.case_id, len(g.rewards)) for g in groups] == [("b", 2), ("a", 2), (None, 1)]
    assert [g.flat for g in groups] == [False, True, True]
    assert all(isinstance(g, Group) for g in groups)


def test_a_steps_statistics() -> None:
    def graded(
        right: float | None, kind: float | None, value: float | None, case: str, **more: Any
    ) -> Reward:
        unscored = [n for n, s in (("right", right), ("kind", kind)) if s is None]
        return Reward(
            run_id=f"{case}{right}{kind}{more}",
            case_id=case,
            reward=value,
            scores={"right": right, "kind": kind},
            unscored=unscored,
            **more,
        )

    rewards = [
        graded(1.0, 1.0, 1.0, "a"),
        graded(0.0, None, 0.0, "a"),  # partly unscored: "kind" counted 0
        graded(None, None, None, "a"),  # no reward
        graded(1.0, 0.5, 0.0, "a", failed=True),  # failed: 0 whatever was graded
        graded(1.0, 1.0, 1.0, "b"),
        graded(1.0, 1.0, 1.0, "b"),  # b is flat
    ]
    stats = step_stats(groups_of(rewards))
    assert (stats.groups, stats.rollouts, stats.flat, stats.flat_share) == (2, 6, 1, 0.5)
    assert stats.trained == 3  # a's three rewarded runs
    assert stats.mean_reward == pytest.approx(3 / 5)
    assert stats.criterion_means == pytest.approx({"right": 4 / 5, "kind": 3.5 / 4})
    assert (stats.unscored, stats.partly_unscored, stats.failed) == (1, 1, 1)


def test_an_empty_step_has_no_mean() -> None:
    stats = step_stats([])
    assert (stats.groups, stats.mean_reward, stats.flat_share) == (0, None, 0.0)
