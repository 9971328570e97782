"""Reinforcement learning with a machine's own evaluator as the reward: each sampled run's reward (the
rubric's weighted sum over every criterion, UNSCORED counting 0), groups of runs of one case and their
advantages (reward − the group's mean), a step's statistics, the options of RL, and its plan, counted and
priced before anything runs. The sampling loop and the trainers' losses build on these.

Names resolve on first use (``__getattr__``): importing the package imports none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from machine._lazy import resolver

if TYPE_CHECKING:
    from ._groups import Group, StepStats, group_of, groups_of, step_stats
    from ._options import RLLoss, RLOptions
    from ._plan import JudgeCall, RLPlan, judge_calls, plan_rl
    from ._reward import Reward, reward_of

_HOMES = {
    "Group": "._groups",
    "StepStats": "._groups",
    "group_of": "._groups",
    "groups_of": "._groups",
    "step_stats": "._groups",
    "RLLoss": "._options",
    "RLOptions": "._options",
    "JudgeCall": "._plan",
    "RLPlan": "._plan",
    "judge_calls": "._plan",
    "plan_rl": "._plan",
    "Reward": "._reward",
    "reward_of": "._reward",
}
"""The module each public name is defined in."""

__all__ = [
    "Group",
    "JudgeCall",
    "RLLoss",
    "RLOptions",
    "RLPlan",
    "Reward",
    "StepStats",
    "group_of",
    "groups_of",
    "judge_calls",
    "plan_rl",
    "reward_of",
    "step_stats",
]

__getattr__, __dir__ = resolver(__name__, _HOMES)
