"""Preference pairs on Tinker: each pair rendered as two Datums after one prompt, the reference model's
log-probabilities of both measured once, and DPO's loss over the policy's, as a custom loss.

Tinker runs a custom loss through ``forward_backward_custom``: the service returns the policy's log-
probability of every target token, the loss is computed here on them (a torch function), and its
gradient goes back to the service as per-token weights. The reference is the model the training starts
from (the live checkpoint, ``start_state``, else the base), read through a sampler of it
(``compute_logprobs``), so a resumed training compares against the same model as its start. The loss is
tinker-cookbook's DPO: -log sigmoid(beta x ((log pi(chosen) - log pi(rejected)) - (the same under the
reference))), each log pi the weighted sum over the answer's tokens, averaged over the step's pairs;
plus, with ``rpo_alpha``, that times the chosen answers' cross-entropy per token (RPO, TRL's
``rpo_alpha``). Its metrics carry ``chosen_drift``, the chosen answers' mean log pi - log pi_ref.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from machine.errors import BadInputError
from machine.training import TrainExample, TrainSettings

from ._render import Rendering, render

LossFn = Callable[[list[Any], list[Any]], tuple[Any, dict[str, float]]]
"""What ``forward_backward_custom`` takes: (the Datums, their log-probabilities) -> (loss, metrics)."""
DPO_LEARNING_RATE = 1e-5
"""DPO's learning rate unless the settings give one: tinker-cookbook's for LoRA (``train_dpo.Config``)."""
SAMPLER_PATH = re.compile(r"^(tinker://[^/]+)/sampler_weights/([^/]+)$")


def start_state(settings: TrainSettings) -> str | None:
    """The saved state DPO and RL start from: the live checkpoint's (its training record's), else the
    state this trainer saved beside its sampler weights (both under one name: ``…/weights/NAME`` beside
    ``…/sampler_weights/NAME``); None for SFT or a training from the base. A live checkpoint with no
    state Tinker can load is refused before anything is spent."""
    start = settings.start if settings.method in ("dpo", "rl") else None
    if start is None:
        return None
    if start.state is not None and start.state.startswith("tinker://"):
        return start.state
    beside = SAMPLER_PATH.match(start.model)
    if beside is not None:
        return f"{beside.group(1)}/weights/{beside.group(2)}"
    raise BadInputError(
        f"{settings.method.upper()} starts from the live checkpoint {start.model!r}, and no state Tinker "
        "can load it from is known (its training record names none): train with sft, or make the base "
        "model live first"
    )


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


def dpo_loss(pairs: Sequence[PairDatums], beta: float, rpo_alpha: float = 0.0) -> LossFn:
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
        ratios, drifts = [], []
        for i, pair in enumerate(pairs):
            assert pair.reference is not None, "the reference's log-probabilities are measured first"
            chosen, rejected = pair.reference
            ratios.append((policy[2 * i] - chosen) - (policy[2 * i + 1] - rejected))
            drifts.append(policy[2 * i] - chosen)
        margin = torch.stack(ratios)
        value = -F.logsigmoid(beta * margin).mean()
        if rpo_alpha:
            value = (
                value
                + rpo_alpha
                * torch.stack(
                    [-policy[2 * i] / weight_sum(pair.chosen) for i, pair in enumerate(pairs)]
                ).mean()
            )
        return value, {
            "dpo_loss": float(value.item()),
            "accuracy": float((margin > 0).float().mean().item()),
            "margin": float((beta * margin).mean().item()),
            "chosen_drift": float(torch.stack(drifts).mean().item()),
        }

    return loss


def drift_of(output: Any) -> float | None:
    """A DPO step's chosen drift, from the metrics its loss returned."""
    metrics: dict[str, float] = getattr(output, "metrics", None) or {}
    return float(metrics["chosen_drift"]) if "chosen_drift" in metrics else None


__all__ = [
    "DPO_LEARNING_RATE",
    "LossFn",
    "PairDatums",
    "dpo_loss",
    "drift_of",
    "full_sequence",
    "pair_datums",
    "scored",
    "start_state",
    "weight_sum",
]
