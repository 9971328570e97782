"""Reinforcement learning on Tinker (issue 53): sampled sequences into the datum shape of Tinker's built-in
``importance_sampling`` and ``ppo`` losses, one RL optimizer step on a training client, and sampling the
latest weights with the log-probability of every sampled token.

The datum is the cookbook's (``rl.data_processing.trajectory_to_data``, less the ``mask`` that
``rl.train`` removes before sending): for a sequence of N token ids, ``model_input`` is ids[:-1] and the
``loss_fn_inputs`` are, each of length N - 1 and aligned with the targets, ``target_tokens`` (ids[1:],
int64), ``logprobs`` (the sampler's log q of each target, float32) and ``advantages`` (the sequence's
advantage where the target is the model's own token, float32). Where the mask is off (the prompt, a tool
result) both the log q and the advantage are 0, so the position adds nothing to the loss or its gradient.
A sequence with no gradient (advantage 0 or None, or no token of the model's own) is not sent: counted as
skipped, as the local step skips it. Tinker's losses are token sums (``loss:sum``); the step reports that
sum and, as the local step does, that sum per sequence given.

The optimizer is Adam with the cookbook's RL betas (0.9, 0.95, eps 1e-8). A step's tokens are reserved at
the base model's training price before anything is sent (the SFT path's rule), and settled once the
service has answered. Sampling reserves its prompt and the most it may generate at the price of the model
sampled, settled with what came back. Every call goes through the trainer's ``_call``: a timeout, retries
with backoff on failures worth retrying, and a request with no reply never sent twice.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from machine.budget import TRAINING, Budget
from machine.errors import BadInputError
from machine.runs import Usage
from machine.training import Checkpoint

from ._calls import Caller

RLLossName = Literal["importance_sampling", "ppo"]
RL_LOSSES: tuple[RLLossName, ...] = ("importance_sampling", "ppo")
PPO_CLIP = 0.2
"""PPO's ε on Tinker: the ratio is clipped to [1 - ε, 1 + ε] (the service's default; another ε is sent in
``loss_fn_config`` as its ``clip_low_threshold``/``clip_high_threshold``)."""
RL_BETAS = (0.9, 0.95, 1e-8)
"""Adam's beta1, beta2 and eps for RL: the cookbook's ``rl.train.train_step``."""
LOSS_INPUTS = ("target_tokens", "logprobs", "advantages")
"""The ``loss_fn_inputs`` the RL losses read, in the cookbook's order."""


class SampledSequence(Protocol):
    """An RL sequence (``machine.clients._rl_turns.RLSequence`` is one): its token ids, which of them the
    model wrote, the sampler's log q of each, and the sequence's advantage."""

    input_ids: list[int]
    mask: list[bool]
    sampler_logprobs: list[float]
    advantage: float | None


def trained(sequence: SampledSequence) -> bool:
    """Whether the sequence carries a gradient: an advantage other than 0 and a target of the model's own
    (the first token is never a target: it has no context)."""
    return bool(sequence.advantage) and any(sequence.mask[1:])


def rl_datum(sequence: SampledSequence, advantages: Sequence[float] | None = None) -> Any:
    """The sequence as a ``tinker.types.Datum`` for the ``importance_sampling`` and ``ppo`` losses;
    ``advantages`` gives each target its own (a KL penalty's, ``_rl_kl``) in place of the sequence's."""
    import numpy as np
    from tinker import types

    ids, mask, logq = sequence.input_ids, sequence.mask, sequence.sampler_logprobs
    if len(ids) < 2:
        raise BadInputError(f"an RL sequence needs 2 tokens at least to have a target (got {len(ids)})")
    if len(mask) != len(ids) or len(logq) != len(ids):
        raise BadInputError(
            f"an RL sequence of {len(ids)} tokens needs a mask and a log-probability per token "
            f"(got {len(mask)} and {len(logq)})"
        )
    kept = mask[1:]
    given = [float(sequence.advantage or 0.0)] * len(kept) if advantages is None else list(advantages)
    if len(given) != len(kept):
        raise BadInputError(
            f"an RL sequence of {len(ids)} tokens needs {len(kept)} advantages (got {len(given)})"
        )
    targets = np.asarray(ids[1:], dtype=np.int64)
    sampler = np.asarray(
        [float(q) if k else 0.0 for q, k in zip(logq[1:], kept, strict=True)], dtype=np.float32
    )
    advantages_at = np.asarray([a if k else 0.0 for a, k in zip(given, kept, strict=True)], dtype=np.float32)
    if not np.all(np.isfinite(sampler[np.asarray(kept, dtype=bool)])):
        raise BadInputError("an RL sequence has a log-probability that is not finite at a token it trains")
    return types.Datum(
        model_input=types.ModelInput.from_ints([int(t) for t in ids[:-1]]),
        loss_fn_inputs={
            "target_tokens": types.TensorData.from_numpy(targets),
            "logprobs": types.TensorData.from_numpy(sampler),
            "advantages": types.TensorData.from_numpy(advantages_at),
        },
    )


def loss_config(loss: RLLossName, clip: float = PPO_CLIP) -> dict[str, float] | None:
    """The ``loss_fn_config`` to send: None (the service's defaults) but for PPO at another ε."""
    if loss not in RL_LOSSES:
        raise BadInputError(f"unknown RL loss {loss!r}: use one of {', '.join(RL_LOSSES)}")
    if not 0 < clip < 1:
        raise BadInputError(f"PPO's clip must be between 0 and 1 (got {clip})")
    if loss != "ppo" or math.isclose(clip, PPO_CLIP):
        return None
    return {"clip_low_threshold": 1.0 - clip, "clip_high_threshold": 1.0 + clip}


@dataclass(frozen=True)
class RLStepMetrics:
    """What one RL step on Tinker saw: the loss (the service's ``loss:sum`` per sequence given) and that
    sum, the sequences trained and skipped, the tokens sent and trained, and from the policy's
    log-probabilities the service returned: the mean ratio p/q at the trained tokens, the share PPO's clip
    held (None for importance sampling), and the mean log q - log p (the cookbook's
    ``kl_sample_train``); the service's own metrics (its forward-backward's and optimizer's), the rate,
    the seconds and the cost. A step with nothing to train sends nothing: its means are None."""

    loss: float | None
    loss_sum: float | None
    sequences: int
    skipped: int
    tokens: int
    target_tokens: int
    ratio: float | None
    clipped: float | None
    kl_sample_train: float | None
    learning_rate: float
    seconds: float
    cost_usd: float
    metrics: dict[str, float] = field(default_factory=dict)


def _ratios(datums: Sequence[Any], output: Any) -> tuple[list[float], list[float], list[float]]:
    """At every trained target: log p (the policy's, as the service returned it), log q and A."""
    outputs = getattr(output, "loss_fn_outputs", None) or []
    if len(outputs) != len(datums) or not all("logprobs" in o for o in outputs):
        return [], [], []
    policy, sampler, advantages = [], [], []
    for datum, out in zip(datums, outputs, strict=True):
        lp = out["logprobs"].data
        lq = datum.loss_fn_inputs["logprobs"].data
        adv = datum.loss_fn_inputs["advantages"].data
        for p, q, a in zip(lp, lq, adv, strict=False):
            if a:
                policy.append(float(p))
                sampler.append(float(q))
                advantages.append(float(a))
    return policy, sampler, advantages


def step_metrics(
    datums: Sequence[Any], output: Any, optim: Any, loss: RLLossName, clip: float, given: int
) -> dict[str, Any]:
    """The measured part of a step's metrics, from what the service answered."""
    metrics: dict[str, float] = {**(getattr(output, "metrics", None) or {})}
    metrics.update({f"optim/{k}": v for k, v in (getattr(optim, "metrics", None) or {}).items()})
    total = metrics.get("loss:sum")
    policy, sampler, advantages = _ratios(datums, output)
    ratios = [math.exp(p - q) for p, q in zip(policy, sampler, strict=True)]
    held = [min(max(r, 1 - clip), 1 + clip) * a < r * a for r, a in zip(ratios, advantages, strict=True)]
    return {
        "loss": float(total) / given if total is not None and given else None,
        "loss_sum": float(total) if total is not None else None,
        "ratio": sum(ratios) / len(ratios) if ratios else None,
        "clipped": (sum(held) / len(held) if held else None) if loss == "ppo" else None,
        "kl_sample_train": (
            sum(q - p for p, q in zip(policy, sampler, strict=True)) / len(policy) if policy else None
        ),
        "metrics": metrics,
    }


async def rl_step(
    trainer: Caller,
    client: Any,
    sequences: Sequence[SampledSequence],
    *,
    base_model: str,
    budget: Budget,
    learning_rate: float,
    loss: RLLossName = "importance_sampling",
    clip: float = PPO_CLIP,
    step: int = 1,
    saved: Checkpoint | None = None,
) -> RLStepMetrics:
    """One RL optimizer step on ``client`` (a ``tinker.TrainingClient``) over the sequences that carry a
    gradient, the others counted as skipped (``train_datums``)."""
    chosen = [s for s in sequences if trained(s)]
    return await train_datums(
        trainer,
        client,
        [rl_datum(s) for s in chosen],
        given=len(sequences),
        base_model=base_model,
        budget=budget,
        learning_rate=learning_rate,
        loss=loss,
        clip=clip,
        step=step,
        saved=saved,
    )


async def train_datums(
    trainer: Caller,
    client: Any,
    datums: Sequence[Any],
    *,
    given: int,
    base_model: str,
    budget: Budget,
    learning_rate: float,
    loss: RLLossName = "importance_sampling",
    clip: float = PPO_CLIP,
    step: int = 1,
    saved: Checkpoint | None = None,
) -> RLStepMetrics:
    """One RL optimizer step on ``client``: ``forward_backward`` on ``datums`` (``rl_datum``'s, of the
    ``given`` sequences that carry a gradient) with the built-in ``loss``, then ``optim_step``, submitted
    back to back; the tokens reserved at ``train:BASE`` first. Nothing to train: nothing sent, nothing
    charged."""
    from tinker import types

    config = loss_config(loss, clip)
    skipped = given - len(datums)
    started = time.monotonic()
    if not datums:
        return RLStepMetrics(None, None, 0, skipped, 0, 0, None, None, None, learning_rate, 0.0, 0.0)
    datums = list(datums)
    tokens = sum(int(d.model_input.length) for d in datums)
    targets = sum(sum(1 for a in d.loss_fn_inputs["advantages"].data if a) for d in datums)
    beta1, beta2, eps = RL_BETAS
    params = types.AdamParams(learning_rate=learning_rate, beta1=beta1, beta2=beta2, eps=eps)
    usage = Usage(input_tokens=tokens)

    def submit() -> list[Any]:
        return [client.forward_backward(datums, loss, config), client.optim_step(params)]

    budget.check()
    async with budget.reserve(TRAINING + base_model, usage, kind="training") as hold:
        output, optim = await trainer._call(f"RL step {step} ({loss})", submit, step=step, saved=saved)
        cost = hold.settle(usage)
    measured = step_metrics(datums, output, optim, loss, clip, given)
    return RLStepMetrics(
        sequences=len(datums),
        skipped=skipped,
        tokens=tokens,
        target_tokens=targets,
        learning_rate=learning_rate,
        seconds=time.monotonic() - started,
        cost_usd=cost,
        **measured,
    )


@dataclass(frozen=True)
class Sample:
    """One sampled continuation: its token ids (the stop token included when it stopped), the sampler's
    log q of each, and whether it stopped (else it ran into ``max_tokens``). The fields of the local
    harness's ``TurnRecord``, so ``sequences_of`` turns a run's samples into RL sequences."""

    prompt: list[int]
    tokens: list[int]
    logprobs: list[float]
    stopped: bool

    def sequence_parts(self) -> tuple[list[int], list[bool], list[float]]:
        """The ids, mask and log q of the prompt and this sample as one sequence (the prompt masked)."""
        size = len(self.prompt)
        return (
            [*self.prompt, *self.tokens],
            [False] * size + [True] * len(self.tokens),
            [0.0] * size + list(self.logprobs),
        )


async def latest_sampler(trainer: Caller, client: Any, *, step: int, saved: Checkpoint | None) -> Any:
    """A ``tinker.SamplingClient`` of the training client's weights now (``save_weights_and_get_sampling_
    client``: an ephemeral save, as the cookbook's RL loop makes between steps)."""
    (sampler,) = await trainer._call(
        f"sampling the weights after step {step}",
        lambda: [client.save_weights_and_get_sampling_client()],
        step=step,
        saved=saved,
    )
    return sampler


async def sample(
    trainer: Caller,
    sampler: Any,
    prompt: Sequence[int],
    num_samples: int,
    *,
    model: str,
    budget: Budget,
    max_tokens: int,
    temperature: float = 1.0,
    stop: Sequence[int] | Sequence[str] | None = None,
    seed: int | None = None,
    step: int = 0,
    saved: Checkpoint | None = None,
) -> tuple[list[Sample], float]:
    """``num_samples`` continuations of ``prompt`` (token ids) from ``sampler``, with the log q of every
    sampled token, at ``temperature`` over the whole distribution (no top-k, no top-p: the loss
    differentiates the distribution that was sampled), and what they cost. The prompt and the most it may
    generate are reserved at ``model``'s price first (the model sampled: the base's, for a checkpoint of
    it), and settled with what came back."""
    from tinker import types

    if temperature <= 0 or num_samples < 1 or max_tokens < 1:
        raise BadInputError("RL samples at a temperature above 0, at least one sample of one token")
    params = types.SamplingParams(
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        stop=list(stop) if stop else None,
        top_k=-1,
        top_p=1.0,
    )
    ids = [int(t) for t in prompt]
    model_input = types.ModelInput.from_ints(ids)
    bound = Usage(input_tokens=len(ids) * num_samples, output_tokens=max_tokens * num_samples)
    budget.check()
    async with budget.reserve(model, bound) as hold:
        (reply,) = await trainer._call(
            f"sampling {num_samples} for step {step}",
            lambda: [sampler.sample(model_input, num_samples, params)],
            step=step,
            saved=saved,
        )
        samples = [_sample(ids, s) for s in reply.sequences]
        cost = hold.settle(
            Usage(input_tokens=len(ids) * num_samples, output_tokens=sum(len(s.tokens) for s in samples))
        )
    return samples, cost


def _sample(prompt: list[int], sequence: Any) -> Sample:
    tokens = [int(t) for t in sequence.tokens]
    logprobs = sequence.logprobs
    if logprobs is None or len(logprobs) != len(tokens):
        raise BadInputError(
            f"Tinker returned {0 if logprobs is None else len(logprobs)} log-probabilities for "
            f"{len(tokens)} sampled tokens: RL needs one per token"
        )
    return Sample(prompt, tokens, [float(q) for q in logprobs], sequence.stop_reason == "stop")


__all__ = [
    "LOSS_INPUTS",
    "PPO_CLIP",
    "RL_BETAS",
    "RL_LOSSES",
    "RLLossName",
    "RLStepMetrics",
    "Sample",
    "SampledSequence",
    "latest_sampler",
    "loss_config",
    "rl_datum",
    "rl_step",
    "sample",
    "step_metrics",
    "train_datums",
    "trained",
]
