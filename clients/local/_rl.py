"""Reinforcement learning's loss and one optimizer step on a local model (issue 53): the policy gradient of
sampled sequences against the log-probabilities the sampler recorded, on the model's own tokens only.

The losses are the Tinker cookbook's, token-wise (``r = exp(log p_θ − log q)``, ``A`` the sequence's
advantage): ``importance_sampling`` is −Σ_t r_t·A, ``ppo`` is −Σ_t min(r_t·A, clip(r_t, 1−ε, 1+ε)·A).
Each is a SUM over the sequence's trained tokens, as in the cookbook (a mean per sequence would penalise a
long wrong reply less per token: Dr. GRPO's length bias), and the step's loss is that sum over the batch
divided by the number of sequences GIVEN, the skipped included: a flat group leaves the others' weight as
it was, and the step's size does not grow with the batch. An optional KL penalty to the base (the adapter
switched off) adds β·Σ_t k3, k3 = exp(d) − d − 1 with d = log p_base − log p_θ (TRL's per-token estimator,
never negative); at β = 0 the base is never run. A sequence whose advantage is 0 or None carries no
gradient, the KL's included (the cookbook drops flat groups whole): it is skipped (counted), not run.

Positions follow the token ids: ``mask[i]`` says token ``i`` is the model's own (an assistant token: never
the prompt, a tool result or padding) and ``sampler_logprobs[i]`` is log q of token ``i`` given those before
it; the values at unmasked positions are never read. Blocking torch work, imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._rl_turns import RLSequence
from ._train_pass import kept_logits, micro_batches

LossKind = Literal["importance_sampling", "ppo"]
LOSSES: tuple[LossKind, ...] = ("importance_sampling", "ppo")


@dataclass(frozen=True)
class RLLoss:
    """The loss's settings: its kind, PPO's clip ε, the KL weight β to the base (0: off), the temperature
    the samples were drawn at (the logits are divided by it, so the loss differentiates the distribution
    sampled), and the gradient norm the step clips to."""

    kind: LossKind = "importance_sampling"
    clip: float = 0.2
    kl: float = 0.0
    temperature: float = 1.0
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in LOSSES:
            raise ValueError(f"unknown RL loss {self.kind!r}: use one of {', '.join(LOSSES)}")
        if not 0 < self.clip < 1 or self.kl < 0 or self.temperature <= 0:
            raise ValueError("the RL loss needs 0 < clip < 1, kl >= 0 and temperature > 0")


@dataclass(frozen=True)
class RLMetrics:
    """What one step saw, before its update: the loss (per sequence given), the sequences trained and
    skipped, the tokens trained, the mean ratio p_θ/q, the share of tokens PPO clipped (None for the
    importance-sampling loss), the mean KL estimate to the base (None when off), the mean entropy of the
    policy at the trained tokens, and the gradient's norm before clipping; the means are None, and the
    norm 0, when nothing was trained."""

    loss: float
    sequences: int
    skipped: int
    tokens: int
    ratio: float | None
    clipped: float | None
    kl: float | None
    entropy: float | None
    grad_norm: float


def token_logprobs(
    model: Any, ids: Any, attention: Any, keep: Any, temperature: float = 1.0
) -> tuple[Any, Any]:
    """log p_θ of each kept token (``keep`` aligned with the predictions, as in ``kept_logits``) and the
    entropy of the policy's distribution there (detached), both flat in row-major order."""
    import torch

    logits = kept_logits(model, ids, attention, keep) / temperature
    logp = torch.log_softmax(logits, dim=-1)
    chosen = logp.gather(-1, ids[:, 1:][keep].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1).detach()
    return chosen, entropy


def policy_loss(
    logprobs: Any, sampler: Any, advantages: Any, kind: LossKind, clip: float = 0.2
) -> tuple[Any, Any, Any]:
    """The summed policy-gradient loss over the given tokens (flat tensors: log p_θ, log q, A per token),
    the ratios p_θ/q (detached), and which tokens PPO's clip held (all False for importance sampling)."""
    import torch

    ratio = torch.exp(logprobs - sampler)
    plain = ratio * advantages
    if kind == "importance_sampling":
        return -plain.sum(), ratio.detach(), torch.zeros_like(ratio, dtype=torch.bool)
    held = torch.clamp(ratio, 1 - clip, 1 + clip) * advantages
    return -torch.minimum(plain, held).sum(), ratio.detach(), (held < plain).detach()


def kl_estimate(logprobs: Any, base: Any) -> Any:
    """TRL's per-token k3 estimate of KL(p_θ ‖ p_base) at tokens sampled from p_θ: exp(d) − d − 1 with
    d = log p_base − log p_θ; never negative, and its gradient pulls p_θ towards the base."""
    import torch

    drift = base - logprobs
    return torch.exp(drift) - drift - 1


def padded(sequences: Sequence[RLSequence], device: Any) -> dict[str, Any]:
    """The sequences right-padded to one tensor: ids, attention, the kept predictions (``keep[:, t]``
    predicts token t + 1, which the model wrote), and each kept token's log q and advantage, flat."""
    import torch

    longest = max(len(s.input_ids) for s in sequences)
    ids = torch.zeros((len(sequences), longest), dtype=torch.long)
    attention = torch.zeros((len(sequences), longest), dtype=torch.long)
    wrote = torch.zeros((len(sequences), longest), dtype=torch.bool)
    sampler, advantages = [], []
    for row, sequence in enumerate(sequences):
        size = len(sequence.input_ids)
        ids[row, :size] = torch.tensor(sequence.input_ids)
        attention[row, :size] = 1
        wrote[row, :size] = torch.tensor(sequence.mask)
        for position in (i for i, kept in enumerate(sequence.mask) if kept):
            sampler.append(sequence.sampler_logprobs[position])
            advantages.append(float(sequence.advantage or 0.0))
    return {
        "ids": ids.to(device),
        "attention": attention.to(device),
        "keep": wrote[:, 1:].to(device),
        "sampler": torch.tensor(sampler, dtype=torch.float64, device=device),
        "advantages": torch.tensor(advantages, dtype=torch.float64, device=device),
    }


@dataclass
class _Sums:
    """Running sums over a step's micro-batches, for its metrics."""

    loss: float = 0.0
    tokens: int = 0
    ratio: float = 0.0
    clipped: int = 0
    kl: float = 0.0
    entropy: float = 0.0


def rl_loss(model: Any, sequences: Sequence[RLSequence], config: RLLoss, given: int) -> tuple[Any, _Sums]:
    """The loss of ``sequences`` (all trained ones) divided by ``given``, the number of sequences the
    step was given, and their sums for the metrics; the base runs (without gradient) only when β > 0."""
    import torch

    device = next(model.parameters()).device
    batch = padded(sequences, device)
    args = (model, batch["ids"], batch["attention"], batch["keep"], config.temperature)
    logprobs, entropy = token_logprobs(*args)
    sampler = batch["sampler"].to(logprobs.dtype)
    advantages = batch["advantages"].to(logprobs.dtype)
    loss, ratio, clipped = policy_loss(logprobs, sampler, advantages, config.kind, config.clip)
    sums = _Sums(
        tokens=int(ratio.numel()),
        ratio=float(ratio.sum()),
        clipped=int(clipped.sum()),
        entropy=float(entropy.sum()),
    )
    if config.kl:
        with torch.no_grad(), model.disable_adapter():
            base, _ = token_logprobs(*args)
        drift = kl_estimate(logprobs, base)
        loss = loss + config.kl * drift.sum()
        sums.kl = float(drift.detach().sum())
    sums.loss = float(loss.detach())
    return loss / given, sums


def rl_step(
    model: Any,
    optimizer: Any,
    batch: Sequence[RLSequence],
    config: RLLoss,
    *,
    max_tokens: int = 8192,
    rate: float | None = None,
) -> RLMetrics:
    """One optimizer step on the RL loss over ``batch`` (gradients accumulated over micro-batches of at
    most ``max_tokens`` padded tokens), the gradient clipped to ``config.max_grad_norm``; at ``rate`` when
    given. A batch with nothing to train (every advantage 0 or None) takes no step at all, so not even
    AdamW's momentum moves a weight. The model runs in the mode it is in: RL's adapter has no dropout, or
    the ratio would not be 1 on the very policy that sampled."""
    import torch

    trained = [s for s in batch if s.trained]
    skipped = len(batch) - len(trained)
    if not trained:
        return RLMetrics(0.0, 0, skipped, 0, None, None, None, None, 0.0)
    if rate is not None:
        for group in optimizer.param_groups:
            group["lr"] = rate
    optimizer.zero_grad(set_to_none=True)
    total = _Sums()
    for group in micro_batches(trained, max_tokens):
        loss, sums = rl_loss(model, group, config, len(batch))
        loss.backward()
        for name in vars(total):
            setattr(total, name, getattr(total, name) + getattr(sums, name))
    weights = [p for p in model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(weights, config.max_grad_norm)
    optimizer.step()
    tokens = max(total.tokens, 1)
    return RLMetrics(
        loss=total.loss / len(batch),
        sequences=len(trained),
        skipped=skipped,
        tokens=total.tokens,
        ratio=total.ratio / tokens,
        clipped=total.clipped / tokens if config.kind == "ppo" else None,
        kl=total.kl / tokens if config.kl else None,
        entropy=total.entropy / tokens,
        grad_norm=float(norm),
    )
