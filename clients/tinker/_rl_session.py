"""RL on Tinker as the trainer offers it (``machine.training.RLSession``): a training client on a new LoRA
on the base (or the live checkpoint's state, or the state a stopped training saved), Adam at the cookbook's
RL betas, a harness a step sampling the latest weights (``_rl_harness``), and one update a step from the
advantages the loop gives by run id.

An update takes the named runs' recorded turns (a run with none is counted ``missing``) and releases the
rest, merges each run's turns into the sequences the loss trains (``sequences_of``: the model's own tokens
only), cuts each to ``max_length`` when the settings give one, keeps those with a gradient, penalises
their advantages by the KL to the base when the settings give a weight (``_rl_kl``), and takes ``passes``
optimizer steps over them (``_rl.train_datums``: PPO's epochs, one for importance sampling), reporting
the last pass's loss, ratio and clipped share as the local session does. The entropy reported is the
cookbook's estimate, −mean log q at the trained tokens; the gradient norm is the optimizer's where the
service reports one. Sampling and updating alternate, never overlap: the loop samples a whole step, then
updates. A failure of the service while the step sampled stops the training at the update, with a
``TrainingError`` naming the step, rather than letting every later step train on nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from machine.budget import Budget
from machine.errors import TrainingError
from machine.runs import Harness
from machine.training import Checkpoint, RLSettings, RLUpdate, TrainSettings

from .._rl_turns import Records, RLSequence, batch_of
from ._calls import Caller
from ._render import Rendering
from ._rl import latest_sampler, rl_datum, train_datums, trained
from ._rl_harness import _PolicySampler
from ._rl_kl import base_logprobs, kl_advantages, open_reference
from ._saves import save_sampler, save_state

RL_LEARNING_RATE = 1e-5
"""Adam's learning rate for RL on Tinker unless the settings give one: the rate tinker-cookbook's RL
recipes default to on LoRA (``recipes/rubric``, whose reward is a rubric as here, ``math_rl``, ``code_rl``,
``harbor_rl``), tens of times below the supervised rate ``get_lr`` gives, since every step follows the
policy's own samples and a step too far changes what the next one samples."""


def cut(sequence: RLSequence, max_length: int | None) -> RLSequence:
    """The sequence's first ``max_length`` tokens with their mask and log q (all of it when None)."""
    if max_length is None or len(sequence.input_ids) <= max_length:
        return sequence
    return RLSequence(
        sequence.input_ids[:max_length],
        sequence.mask[:max_length],
        sequence.sampler_logprobs[:max_length],
        sequence.advantage,
    )


def sampled_entropy(sequences: Sequence[RLSequence]) -> float | None:
    """−mean log q over the tokens the model wrote: the cookbook's estimate of the sampler's entropy."""
    logq = [q for s in sequences for q, m in zip(s.sampler_logprobs[1:], s.mask[1:], strict=True) if m]
    return -sum(logq) / len(logq) if logq else None


def grad_norm(metrics: Mapping[str, float]) -> float | None:
    """The gradient norm among the service's metrics, where it reports one."""
    return next((float(v) for k, v in metrics.items() if k.endswith("grad_norm")), None)


@dataclass
class TinkerRLSession:
    """One RL training on Tinker (see the module) on ``client``, which ``TinkerTrainer.rl`` opens; ``done``
    steps are behind it, ``saved`` is the last state saved (a resumed training's to begin with)."""

    trainer: Caller
    client: Any
    settings: TrainSettings
    rl: RLSettings
    rendering: Rendering
    folder: Path
    budget: Budget
    learning_rate: float
    done: int = 0
    saved: Checkpoint | None = None
    save_every: int = 0
    records: Records = field(default_factory=Records)
    _policy: tuple[int, Any] | None = None
    _reference: Any = None
    _failures: dict[int, TrainingError] = field(default_factory=dict)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    def sampler(self, step: int) -> Harness:
        """The harness sampling the policy for ``step``, into this session's records."""
        return _PolicySampler(self, step)

    async def policy(self, step: int) -> Any:
        """A ``tinker.SamplingClient`` of the weights now, opened once for step ``step``."""
        async with self._lock:
            if self._policy is None or self._policy[0] != step:
                sampler = await latest_sampler(self.trainer, self.client, step=self.done, saved=self.saved)
                self._policy = (step, sampler)
            return self._policy[1]

    def failed(self, step: int, error: TrainingError) -> None:
        """Keep the first failure of the service while step ``step`` sampled, for its update to raise."""
        self._failures.setdefault(step, error)

    async def update(self, step: int, advantages: Mapping[str, float | None], rate: float) -> RLUpdate:
        """One step over the named runs' sequences (see the module); the step's other records are
        released."""
        started = time.monotonic()
        batch, missing = self._taken(advantages)
        failure = self._failures.pop(step, None)
        if failure is not None:
            raise TrainingError(
                f"RL step {step} stopped: {failure}", step=step, checkpoint=self.saved
            ) from failure
        chosen = [s for s in batch if trained(s)]
        penalised, kl, cost = await self._penalised(chosen, step)
        datums = [rl_datum(s, a) for s, a in zip(chosen, penalised, strict=True)]
        for _ in range(self.rl.passes):
            metrics = await train_datums(
                self.trainer,
                self.client,
                datums,
                given=len(batch),
                base_model=self.settings.base_model,
                budget=self.budget,
                learning_rate=rate,
                loss=self.rl.loss,
                clip=self.rl.clip,
                step=step,
                saved=self.saved,
            )
            cost += metrics.cost_usd
        self.done, self._policy = step, None
        return RLUpdate(
            loss=metrics.loss if metrics.sequences else None,
            sequences=metrics.sequences,
            skipped=metrics.skipped,
            missing=missing,
            tokens=metrics.target_tokens,
            ratio=metrics.ratio,
            clipped=metrics.clipped,
            kl=kl,
            entropy=sampled_entropy(chosen),
            grad_norm=grad_norm(metrics.metrics),
            seconds=time.monotonic() - started,
            cost_usd=cost,
        )

    def _taken(self, advantages: Mapping[str, float | None]) -> tuple[list[RLSequence], int]:
        """The named runs' sequences (``batch_of``), cut to ``max_length``, and how many runs had no
        turns recorded; every other record is released."""
        batch, missing = batch_of(self.records, advantages)
        return [cut(s, self.settings.max_length) for s in batch], missing

    async def _penalised(
        self, chosen: list[RLSequence], step: int
    ) -> tuple[list[list[float] | None], float | None, float]:
        """Each sequence's advantages with the KL penalty (None: the sequence's own), the KL estimate,
        and what measuring the base cost; without a KL weight, nothing is measured."""
        kl = self.settings.kl or 0.0
        if not kl or not chosen:
            return [None] * len(chosen), None, 0.0
        base_model = self.settings.base_model
        if self._reference is None:
            self._reference = await open_reference(self.trainer, base_model, step=step, saved=self.saved)
        base, cost = await base_logprobs(
            self.trainer,
            self._reference,
            chosen,
            base_model=base_model,
            budget=self.budget,
            step=step,
            saved=self.saved,
        )
        penalised, mean = kl_advantages(chosen, base, kl)
        return list(penalised), mean, cost

    async def save(self) -> Checkpoint:
        """The state after the steps done (weights, Adam's moments), to resume from."""
        self.saved = await save_state(
            self.trainer, self.client, self.folder, self.settings.base_model, self.done, self.saved
        )
        return self.saved

    async def finish(self) -> Checkpoint:
        """The weights saved for sampling: the ``tinker://…/sampler_weights/…`` checkpoint."""
        return await save_sampler(
            self.trainer, self.client, self.folder, self.settings.base_model, self.done, self.saved
        )

    async def close(self) -> None:
        """Forget the records and the samplers (the SDK's clients hold nothing to stop)."""
        self.records.clear()
        self._policy = self._reference = None
