"""Preference pairs on Tinker: each pair rendered as two Datums after one prompt, the base model's
log-probabilities of both measured once, and DPO's loss over the policy's, as a custom loss.

Tinker runs a custom loss through ``forward_backward_custom``: the service returns the policy's log-
probability of every target token, the loss is computed here on them (a torch function), and its
gradient goes back to the service as per-token weights. The reference is the base model itself, read
through a sampler of it (``compute_logprobs``), so a resumed training compares against the same model
as its start. The loss is tinker-cookbook's supervised DPO: -log sigmoid(beta x ((log pi(chosen) -
log pi(rejected)) - (the same under the base))), each log pi the weighted sum over the answer's tokens,
averaged over the step's pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from machine.runs import TrainExample

from ._tinker_render import Rendering, render

LossFn = Callable[[list[Any], list[Any]], tuple[Any, dict[str, float]]]
"""What ``forward_backward_custom`` takes: (the Datums, their log-probabilities) -> (loss, metrics)."""


@dataclass
class PairDatums:
    """One preference pair as Tinker trains on it: the chosen answer's Datum and the rejected's, after
    the same prompt, and (once measured) the base model's weighted log-probability of each."""

    chosen: Any
    rejected: Any
    reference: tuple[float, float] | None = None

    @property
    def datums(self) -> tuple[Any, Any]:
        return self.chosen, self.rejected


def weight_sum(datum: Any) -> float:
    return float(sum(datum.loss_fn_inputs["weights"].data))


def pair_datums(example: TrainExample, rendering: Rendering, make: Callable[[Any], Any]) -> PairDatums | None:
    """The pair's two sequences, each with its one target weighted (``make`` turns a rendered sequence
    into a Datum, cut to the settings' length); None when a cut leaves either side nothing to learn."""
    sides: list[Any] = []
    for messages in example.sides():
        one = example.model_copy(update={"messages": messages, "rejected": None})
        rendered = render(one, rendering).sequences
        datum = make(rendered[-1]) if rendered else None
        if datum is None or weight_sum(datum) <= 0:
            return None
        sides.append(datum)
    return PairDatums(sides[0], sides[1])


def full_sequence(datum: Any) -> Any:
    """The tokens a Datum was shifted from (its input and its last target): what a sampler scores."""
    targets = datum.loss_fn_inputs["target_tokens"].data
    return datum.model_input.append_int(int(targets[-1])) if targets else datum.model_input


def scored(datum: Any, logprobs: Sequence[float | None]) -> float:
    """The weighted sum of a sampler's log-probabilities of ``full_sequence(datum)``: its first entry
    scores no token (it has no context), so the rest line up with the Datum's targets."""
    weights = datum.loss_fn_inputs["weights"].data
    values = list(logprobs[1:])
    if len(values) != len(weights):
        raise ValueError(f"the sampler scored {len(values)} tokens of a sequence with {len(weights)} targets")
    return float(sum(w * (lp or 0.0) for lp, w in zip(values, weights, strict=True) if w))


def dpo_loss(pairs: Sequence[PairDatums], beta: float) -> LossFn:
    """The custom loss of one step over ``pairs`` (flattened chosen, rejected, chosen, ...)."""

    def loss(data: list[Any], logprobs: list[Any]) -> tuple[Any, dict[str, float]]:
        import torch
        import torch.nn.functional as F

        if len(logprobs) != 2 * len(pairs):
            raise ValueError(f"{len(logprobs)} log-probability rows for {len(pairs)} pairs")
        policy = [
            torch.dot(lp.float(), torch.tensor(d.loss_fn_inputs["weights"].data, dtype=torch.float32))
            for d, lp in zip(data, logprobs, strict=True)
        ]
        ratios = []
        for i, pair in enumerate(pairs):
            assert pair.reference is not None, "the base model's log-probabilities are measured first"
            chosen, rejected = pair.reference
            ratios.append((policy[2 * i] - chosen) - (policy[2 * i + 1] - rejected))
        margin = torch.stack(ratios)
        value = -F.logsigmoid(beta * margin).mean()
        return value, {
            "dpo_loss": float(value.item()),
            "accuracy": float((margin > 0).float().mean().item()),
            "margin": float((beta * margin).mean().item()),
        }

    return loss


__all__ = ["LossFn", "PairDatums", "dpo_loss", "full_sequence", "pair_datums", "scored", "weight_sum"]
