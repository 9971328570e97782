"""The KL penalty to the base model for RL on Tinker, the cookbook's way (``rl.metrics.
incorporate_kl_penalty``): a sampler of the base (opened once a session) gives ``compute_logprobs`` of
each sequence the step trains, and at every token the model wrote, with d = log q − log p_base (q the
sampler's, as recorded), the advantage becomes A + kl·(d̄ − d), d̄ the mean d over every such token of
the batch. So the tokens the policy made likelier than the base pay for it, relative to the batch; d̄ is
the step's KL estimate of the sampler to the base. The cookbook's discounting of the penalty
(``kl_discount_factor``) is left at its default, off.

Only the sequences with a gradient of their own are measured and penalised: a flat group's runs are
skipped whole, as the local trainer skips them, KL and all. The base's prefill of those sequences is
reserved and charged at the base's sampling price (the RL plan prices it so, as ``reference``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from machine.budget import Budget
from machine.errors import TrainingError
from machine.runs import Usage
from machine.training import Checkpoint

from ._calls import Caller

if TYPE_CHECKING:
    from ._rl import SampledSequence


async def open_reference(trainer: Caller, base_model: str, *, step: int, saved: Checkpoint | None) -> Any:
    """A ``tinker.SamplingClient`` of the base model, the penalty's reference."""
    (sampler,) = await trainer._call(
        f"opening a sampler of {base_model} for the KL penalty",
        lambda: [trainer.service().create_sampling_client(base_model=base_model)],
        step=step,
        saved=saved,
    )
    return sampler


async def base_logprobs(
    trainer: Caller,
    reference: Any,
    sequences: Sequence[SampledSequence],
    *,
    base_model: str,
    budget: Budget,
    step: int,
    saved: Checkpoint | None,
) -> tuple[list[list[float]], float]:
    """log p_base of every target (token 1 on) of each sequence, and what measuring them cost."""
    from tinker import types

    inputs = [types.ModelInput.from_ints([int(t) for t in s.input_ids]) for s in sequences]
    usage = Usage(input_tokens=sum(int(i.length) for i in inputs))
    budget.check()
    async with budget.reserve(base_model, usage, kind="training") as hold:
        replies = await trainer._call(
            f"measuring {base_model} for the KL penalty of RL step {step}",
            lambda: [reference.compute_logprobs(i) for i in inputs],
            step=step,
            saved=saved,
        )
        cost = hold.settle(usage)
    measured: list[list[float]] = []
    for sequence, reply in zip(sequences, replies, strict=True):
        values = list(reply)
        wanted = [v for v, m in zip(values[1:], sequence.mask[1:], strict=False) if m]
        if len(values) != len(sequence.input_ids) or any(v is None for v in wanted):
            raise TrainingError(
                f"Tinker returned {len(values)} log-probabilities of the base for a sequence of "
                f"{len(sequence.input_ids)} tokens, or none at a token the model wrote: the KL penalty "
                "needs one at each",
                step=step,
                checkpoint=saved,
            )
        measured.append([0.0 if v is None else float(v) for v in values[1:]])
    return measured, cost


def kl_advantages(
    sequences: Sequence[SampledSequence], base: Sequence[Sequence[float]], kl: float
) -> tuple[list[list[float]], float | None]:
    """Each sequence's advantage at each target with the penalty (see the module), 0 where the target is
    not the model's own; and d̄ (None when no token was the model's)."""
    diffs = [
        [q - p if m else 0.0 for q, p, m in zip(s.sampler_logprobs[1:], b, s.mask[1:], strict=True)]
        for s, b in zip(sequences, base, strict=True)
    ]
    count = sum(sum(s.mask[1:]) for s in sequences)
    if not count:
        return [[0.0] * (len(s.input_ids) - 1) for s in sequences], None
    mean = sum(sum(d) for d in diffs) / count
    advantages = [
        [
            float(s.advantage or 0.0) + kl * (mean - d) if m else 0.0
            for d, m in zip(ds, s.mask[1:], strict=True)
        ]
        for s, ds in zip(sequences, diffs, strict=True)
    ]
    return advantages, mean
