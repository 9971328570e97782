"""What every local training's forward pass shares, SFT's, DPO's and RL's alike: a step's sequences split
into micro-batches by their padded size, and the next-token logits at the trained positions only (the
head run there alone). Its own module so the sessions and the RL loss both use it without importing each
other. torch is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar


class _Tokens(Protocol):
    """What a micro-batch is sized by: a sequence's token ids."""

    @property
    def input_ids(self) -> list[int]: ...


Tokens = TypeVar("Tokens", bound=_Tokens)


def micro_batches(sequences: Sequence[Tokens], max_tokens: int) -> list[list[Tokens]]:
    """The step's sequences (SFT's, or RL's samples) in groups whose padded size stays within
    ``max_tokens`` (one at least)."""
    groups: list[list[Tokens]] = []
    for sequence in sequences:
        if groups:
            group = groups[-1]
            longest = max(len(sequence.input_ids), *(len(s.input_ids) for s in group))
            if longest * (len(group) + 1) <= max_tokens:
                group.append(sequence)
                continue
        groups.append([sequence])
    return groups


def kept_logits(model: Any, ids: Any, attention: Any, keep: Any) -> Any:
    """The next-token logits at the ``keep`` positions (``keep[:, t]``: position t predicts token t + 1),
    the head run on those only; in float32 at least (float64 stays float64)."""
    import torch

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    if getattr(inner.config, "final_logit_softcapping", None):  # the head alone would skip the cap
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1][keep]
    else:
        hidden = inner.get_decoder()(input_ids=ids, attention_mask=attention).last_hidden_state
        logits = inner.get_output_embeddings()(hidden[:, :-1][keep])
    return logits.to(torch.promote_types(logits.dtype, torch.float32))
