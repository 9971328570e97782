"""What reinforcement learning with the rubric as reward adds to a training: how many runs are sampled
(groups of ``group`` runs of ``cases_per_step`` cases, for ``rl_steps`` steps), how they are sampled
(``temperature``, ``max_tokens``), and the loss that learns from them. Every default and bound once, for
every face, as each learner's options model owns its own. ``TrainOptions`` holds it as ``rl`` (with
method ``rl``) beside the training's own options, the KL penalty to the base among them (``kl``), the
learning rate, the rank, and the gate's trials and ``min_z``."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from machine.errors import BadInputError
from machine.training import RLSettings

from .._options import Options

RLLoss = Literal["importance_sampling", "ppo"]
"""``importance_sampling``: −Σ (p_θ/q)·A per token, q the sampler's probability, one optimizer step a
batch; ``ppo``: the same ratio clipped to [1 − ε, 1 + ε], over several passes of the batch."""

MAX_GROUP = 64
MAX_CASES_PER_STEP = 256
MAX_RL_STEPS = 10_000
MAX_PPO_EPOCHS = 16
MAX_TOKENS = 32_768
PPO_ONLY = ("clip", "ppo_epochs")
"""The options that shape only the ``ppo`` loss."""


class RLOptions(Options):
    """The options of RL on a machine's own evaluator: sampling, groups and the policy loss."""

    operation = "rl training"

    group: int = Field(
        8,
        ge=2,
        le=MAX_GROUP,
        strict=True,
        description="Runs sampled of each case a step, compared with each other (advantage: reward − the "
        "group's mean). 8, as TRL's num_generations, rather than the cookbook rubric recipe's 4: a group "
        "whose runs all get the same reward teaches nothing, and with check rewards at a success rate p "
        "that is pᴳ + (1 − p)ᴳ of groups, 41% at p = 0.2 with 4 but 17% with 8.",
    )
    cases_per_step: int = Field(
        4,
        ge=1,
        le=MAX_CASES_PER_STEP,
        strict=True,
        description="Cases a step samples (each a group): the batch is cases_per_step x group runs, 32 "
        "by default, small enough for a step of a local model on a few CPU cores.",
    )
    rl_steps: int = Field(
        20,
        ge=1,
        le=MAX_RL_STEPS,
        strict=True,
        description="Steps of sampling, grading and one update (ppo: ppo_epochs updates) each.",
    )
    temperature: float = Field(
        1.0,
        gt=0,
        le=2,
        description="Sampling temperature, with no top-k or top-p: the loss differentiates the "
        "distribution that was sampled, which is the model's own only at 1.",
    )
    max_tokens: int = Field(
        256,
        ge=16,
        le=MAX_TOKENS,
        strict=True,
        description="Tokens a sampled reply may have, each model turn (256: TRL's max_completion_length "
        "and the local harness's default); a reply cut there is counted.",
    )
    loss: RLLoss = Field(
        "importance_sampling",
        description="importance_sampling: the policy gradient weighted by the ratio to the sampler's "
        "probabilities, one optimizer step a batch (the cookbook's default); ppo: that ratio clipped to "
        "1 ± clip, over ppo_epochs passes of the batch.",
    )
    clip: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="PPO's clip epsilon: the ratio is held in [1 − clip, 1 + clip] (0.2, as PPO, TRL's "
        "epsilon and the cookbook's [0.8, 1.2]; with ppo only).",
    )
    ppo_epochs: int = Field(
        2,
        ge=1,
        le=MAX_PPO_EPOCHS,
        strict=True,
        description="Optimizer passes over each batch with ppo (2: the fewest where the clip acts, the "
        "ratio being 1 on the first; more reuse each costly sample but drift off the policy that "
        "sampled it; with ppo only).",
    )
    scale_rewards: bool = Field(
        False,
        description="Divide each advantage by its group's standard deviation (GRPO; default no, as the "
        "cookbook and Dr. GRPO: it inflates groups whose runs barely differ).",
    )

    @model_validator(mode="after")
    def _ppo_options_with_ppo(self) -> Self:
        """``clip`` and ``ppo_epochs`` given other than their defaults with the importance-sampling loss
        would do nothing: refused (the defaults pass, so a record's options read back)."""
        given = self.changed(PPO_ONLY)
        if given and self.loss != "ppo":
            raise BadInputError(
                f"{' and '.join(given)} shape{'s' if len(given) == 1 else ''} the ppo loss only; leave "
                f"{'it' if len(given) == 1 else 'them'} out, or choose loss ppo"
            )
        return self

    def settings(self) -> RLSettings:
        """What the trainer's RL session is given of these."""
        return RLSettings(
            loss=self.loss,
            clip=self.clip,
            passes=self.passes,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            steps=self.rl_steps,
        )

    @property
    def samples(self) -> int:
        """Runs sampled over the whole training: steps x cases a step x group."""
        return self.rl_steps * self.cases_per_step * self.group

    @property
    def passes(self) -> int:
        """Optimizer passes over each step's batch: ppo_epochs with ppo, one with importance sampling."""
        return self.ppo_epochs if self.loss == "ppo" else 1
