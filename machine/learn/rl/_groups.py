"""Groups and advantages: the G runs of one case sampled on the same policy form a group, and each run's
advantage is its reward minus the group's mean, the baseline the Tinker cookbook and Dr. GRPO use. Dividing
by the group's spread (GRPO's, TRL's ``scale_rewards="group"``) is there when asked, off by default: it
weighs a group where the runs barely differ as much as one where they differ widely, so near-ties among
easy or hopeless cases are amplified into full-size updates. A group whose rewards are all equal has
nothing to prefer, so it gives no gradient and is counted as flat; a run without a reward (nothing of it
scored) is left out of its group's mean and gets no gradient either."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import Field

from machine.runs import Record

from ._reward import Reward

STD_EPSILON = 1e-4
"""Added to a group's standard deviation before dividing by it (TRL's), so a near-flat group's
advantages stay finite."""
EQUAL = 1e-9
"""Rewards closer than this are equal: a group of them is flat (float sums of equal grades wobble)."""


class Group(Record):
    """The runs of one case in one step, with each one's advantage (None: no gradient from it)."""

    case_id: str | None
    rewards: list[Reward]
    advantages: list[float | None]
    """One a run, in order: reward − the group's mean (over the runs with a reward), divided by the
    group's standard deviation when the step scales; None for a run without a reward and for every run
    of a flat group."""
    mean: float | None = None
    """The group's mean reward over the runs with one (None: none has)."""
    flat: bool = False
    """Fewer than two different rewards among the runs with one: nothing to learn from the group."""

    @property
    def trained(self) -> list[tuple[Reward, float]]:
        """The runs that carry a gradient, each with its advantage."""
        return [(r, a) for r, a in zip(self.rewards, self.advantages, strict=True) if a is not None]


def group_of(rewards: Sequence[Reward], *, scale_rewards: bool = False) -> Group:
    """The advantages of one case's runs (``rewards``, in sampling order)."""
    had = [r.reward for r in rewards if r.reward is not None]
    case = rewards[0].case_id if rewards else None
    if not had:
        return Group(case_id=case, rewards=list(rewards), advantages=[None] * len(rewards), flat=True)
    mean = sum(had) / len(had)
    if max(had) - min(had) <= EQUAL:
        return Group(
            case_id=case, rewards=list(rewards), advantages=[None] * len(rewards), mean=mean, flat=True
        )
    spread = _std(had, mean) + STD_EPSILON if scale_rewards else 1.0
    advantages = [None if r.reward is None else (r.reward - mean) / spread for r in rewards]
    return Group(case_id=case, rewards=list(rewards), advantages=advantages, mean=mean)


def _std(values: Sequence[float], mean: float) -> float:
    """The sample standard deviation (n − 1, as torch's ``std`` that TRL divides by); ``values`` has two
    different ones at least, so n > 1."""
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def groups_of(rewards: Iterable[Reward], *, scale_rewards: bool = False) -> list[Group]:
    """One group per case, in the order the cases first appear: a step's rewards, grouped and centred.
    A run with no case is a group of its own (it has no siblings to be compared with)."""
    by_case: dict[str | None, list[Reward]] = {}
    alone: list[list[Reward]] = []
    for reward in rewards:
        if reward.case_id is None:
            alone.append([reward])
        else:
            by_case.setdefault(reward.case_id, []).append(reward)
    return [group_of(runs, scale_rewards=scale_rewards) for runs in [*by_case.values(), *alone]]


class StepStats(Record):
    """What one step's rollouts say, for the training record and the chart beside the loss."""

    groups: int
    rollouts: int
    trained: int
    """Rollouts that carry a gradient (a reward, in a group that is not flat)."""
    mean_reward: float | None
    """Over the rollouts with a reward (None: none had one)."""
    criterion_means: dict[str, float | None] = Field(default_factory=dict)
    """Each criterion's mean grade over the rollouts that scored it (None: none did)."""
    flat: int
    flat_share: float
    """Flat groups over all groups: with binary rewards at success rate p, about pᴳ + (1 − p)ᴳ."""
    unscored: int
    """Rollouts with nothing scored: no reward, no gradient."""
    partly_unscored: int
    """Rollouts with a reward where some criterion was UNSCORED and counted 0."""
    failed: int
    """Rollouts that ended in an error, rewarded 0."""


def step_stats(groups: Sequence[Group]) -> StepStats:
    """The statistics of one step's groups."""
    rewards = [r for g in groups for r in g.rewards]
    had = [r.reward for r in rewards if r.reward is not None]
    flat = sum(g.flat for g in groups)
    return StepStats(
        groups=len(groups),
        rollouts=len(rewards),
        trained=sum(len(g.trained) for g in groups),
        mean_reward=sum(had) / len(had) if had else None,
        criterion_means=_criterion_means(rewards),
        flat=flat,
        flat_share=flat / len(groups) if groups else 0.0,
        unscored=sum(r.no_signal and not r.failed for r in rewards),
        partly_unscored=sum(bool(r.unscored) and r.reward is not None and not r.failed for r in rewards),
        failed=sum(r.failed for r in rewards),
    )


def _criterion_means(rewards: Sequence[Reward]) -> dict[str, float | None]:
    """Each criterion's mean over the rollouts that scored it, in the rubric's order."""
    grades: dict[str, list[float]] = {}
    for reward in rewards:
        for name, score in reward.scores.items():
            grades.setdefault(name, [])
            if score is not None:
                grades[name].append(score)
    return {name: (sum(got) / len(got) if got else None) for name, got in grades.items()}
