"""What a trainer offers for reinforcement learning with the rubric as reward: an ``RLSession`` on the
policy it trains, which makes a harness that samples that policy (recording each run's tokens and their
log-probabilities as sampled), takes one update from the runs' advantages, and saves states and the
final checkpoint. The loop (``machine.learn``) samples through the workspace, grades, rewards and groups;
the session only samples and learns, so the same loop runs on every trainer that ``takes`` ``rl``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from machine.budget import Budget
from machine.runs import Harness

from ._rl import RLSettings, RLUpdate
from ._trainer import Checkpoint, TrainSettings


@runtime_checkable
class RLSession(Protocol):
    """A policy training by RL on one trainer; ``done`` steps are behind it (a resumed one's too),
    ``learning_rate`` is its rate (the settings', else the trainer's default for RL), and a state is saved
    every ``save_every`` steps (0: only when stopped and at the end)."""

    done: int
    learning_rate: float
    save_every: int

    def sampler(self, step: int) -> Harness:
        """A harness that samples the policy as it is now, for step ``step`` (seeded by the training's
        seed, the step, and each run's seed), recording what each run sampled for ``update``."""
        ...

    async def update(self, step: int, advantages: Mapping[str, float | None], rate: float) -> RLUpdate:
        """Learn from the runs ``advantages`` names (a run id each; None or 0: no gradient) at learning
        rate ``rate``; every run this session sampled for the step is released, named or not."""
        ...

    async def save(self) -> Checkpoint:
        """The state (weights, optimizer, step), to resume from."""
        ...

    async def finish(self) -> Checkpoint:
        """The checkpoint a harness samples, after the last step."""
        ...

    async def close(self) -> None:
        """Release what the session holds (a generation thread, a sampling client)."""
        ...


@runtime_checkable
class RLTrainer(Protocol):
    """A trainer that learns by RL (its ``takes`` names ``rl``)."""

    name: str

    async def rl(
        self,
        settings: TrainSettings,
        rl: RLSettings,
        *,
        folder: Path,
        budget: Budget,
        resume: Checkpoint | None = None,
    ) -> RLSession:
        """A session on ``settings.base_model`` (from ``settings.start`` when given), restored from
        ``resume``'s state when given."""
        ...
