"""DPO on a local model: the preference pairs rendered as two sequences after one prompt, and where the
training starts, the live checkpoint's adapter (``local:BASE+ADAPTER``) kept in its shape, so DPO builds on
the fine-tune it is gated against instead of undoing it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from machine.errors import BadInputError
from machine.training import TrainExample, TrainSettings

from ._models import resolve
from ._train_data import PairSequence, Renderer, render, truncated
from ._train_session import Lora

DPO_LEARNING_RATE = 2e-5
"""DPO's, for LoRA: a tenth of SFT's, in the range TRL's and tinker-cookbook's DPO recipes use for LoRA
(1e-5 to 5e-5); at SFT's rate over 8 epochs, 16 pairs drove a small model's replies to one repeated
phrase."""


def start_adapter(settings: TrainSettings, root: Path | None) -> Path | None:
    """The adapter folder DPO and RL start from: the live checkpoint's (``local:BASE+ADAPTER``) on this
    base; None for SFT, or when the settings name no checkpoint with an adapter."""
    if settings.method == "sft" or settings.start is None:
        return None
    source = resolve(settings.start.model, root)
    if source.adapter is None:
        return None
    if source.base != resolve(settings.base_model, root).base:
        raise BadInputError(
            f"the live checkpoint {settings.start.model} is not an adapter on the base model "
            f"{settings.base_model}, so {settings.method.upper()} cannot start from it"
        )
    return Path(source.adapter)


def live_shape(adapter: Path, settings: TrainSettings, dropout: float) -> Lora:
    """The live adapter's shape, with ``dropout``; a rank, alpha or modules given that differ from it
    are refused, since the training goes on from its weights."""
    config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    modules = config.get("target_modules") or ()
    shape = Lora(
        int(config["r"]),
        int(config.get("lora_alpha") or config["r"]),
        tuple(sorted([modules] if isinstance(modules, str) else modules)),
        dropout,
    )
    given = {
        "rank": (settings.rank, shape.rank),
        "LoRA alpha": (settings.lora_alpha, shape.alpha),
        "target modules": (sorted(settings.target_modules or ()) or None, sorted(shape.target_modules)),
    }
    differs = [
        f"{what} {mine} (the live adapter's is {its})"
        for what, (mine, its) in given.items()
        if mine and mine != its
    ]
    if differs:
        raise BadInputError(
            f"{settings.method.upper()} goes on from the live adapter {adapter}, in its shape: "
            f"{'; '.join(differs)}; leave them out"
        )
    return shape


def render_pairs(
    renderer: Renderer, examples: Sequence[TrainExample], max_length: int | None
) -> tuple[list[PairSequence], int]:
    """Each preference pair as its chosen and its rejected sequence after the same prompt (the pairs a
    cut leaves without a target in either are dropped); and how many were dropped."""
    pairs: list[PairSequence] = []
    for example in examples:
        sides = [
            render(renderer, messages, example.tools, example.targets, run_id=example.run_id).sequences
            for messages in example.sides()
        ]
        cut = [truncated(side[0], max_length) if side else None for side in sides]
        if cut[0] is not None and cut[1] is not None:
            pairs.append(PairSequence(cut[0], cut[1]))
    return pairs, len(examples) - len(pairs)
