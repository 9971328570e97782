"""What reinforcement learning with the rubric as reward hands a trainer and gets back: how it samples
and what loss it learns with (``RLSettings``), what one update did (``RLUpdate``), and what the training
record keeps of each step (``RLStepMetrics``). The session protocol is ``_rl_session``'s."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from machine._data import Model

RLLossKind = Literal["importance_sampling", "ppo"]


class RLSettings(Model):
    """How the session samples and what loss it learns with (the learner's options, as a trainer needs
    them): PPO's clip and passes over each batch, the sampling temperature and each turn's token cap."""

    loss: RLLossKind = "importance_sampling"
    clip: float = 0.2
    passes: int = 1
    """Optimizer steps over each step's batch (``ppo_epochs`` with ppo, one with importance sampling)."""
    temperature: float = 1.0
    max_tokens: int = 256
    steps: int = 1
    """The training's steps (a state saved past them is refused)."""


class RLUpdate(Model):
    """What one update did, before its optimizer step(s): the loss (a sum over trained tokens, per
    sequence given), sequences trained and skipped (no advantage, or nothing the model wrote), tokens
    trained, the mean ratio p_θ/q, the share PPO clipped, the KL estimate to the base, the policy's
    entropy at the trained tokens, the gradient norm before clipping, and the time and money it took.
    The means are None when nothing was trained."""

    loss: float | None = None
    sequences: int = 0
    skipped: int = 0
    missing: int = 0
    """Runs given an advantage whose sampled tokens the session never recorded (a run that failed before
    its model answered): nothing to train."""
    tokens: int = 0
    ratio: float | None = None
    clipped: float | None = None
    kl: float | None = None
    entropy: float | None = None
    grad_norm: float | None = None
    seconds: float = 0.0
    cost_usd: float = 0.0


class RLStepMetrics(Model):
    """One RL step in the training record, beside its loss: what the rollouts said and what the update
    saw (``RLUpdate``'s means)."""

    reward: float | None
    """The mean reward over the rollouts with one (None: none had one)."""
    criteria: dict[str, float | None] = Field(default_factory=dict)
    """Each criterion's mean grade over the rollouts that scored it."""
    rollouts: int
    trained: int
    """Rollouts that carried a gradient."""
    flat_share: float
    """Groups whose rewards were all equal (no gradient), over all groups."""
    unscored: int
    failed: int
    reply_tokens: float | None = None
    """The rollouts' mean tokens written by the model, every turn together."""
    cut_share: float = 0.0
    """Rollouts whose last reply was cut at the token cap."""
    ratio: float | None = None
    clipped: float | None = None
    kl: float | None = None
    entropy: float | None = None
    grad_norm: float | None = None
    sampling_seconds: float = 0.0
    """Sampling and grading the step's rollouts."""
