"""What model calls cost: USD per million tokens, with prompt-cache hits at their own rate.

Tinker's listed sampling prices (prefill, cached prefill, sample) for the models this project
names. Where Tinker lists a temporary discount, the full price is kept, so estimates err high.
Free OpenRouter models (ids ending in ``:free``) cost nothing, and so do local models (``local:...``,
run in this process) and training them (``train:local:...``).
"""

from __future__ import annotations

from dataclasses import dataclass

from machine._backends import declared_free
from machine._data import Record


class Usage(Record):
    """Tokens a model call (or a whole run) used; cached input is part of the input."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @property
    def is_zero(self) -> bool:
        return not (self.input_tokens or self.cached_input_tokens or self.output_tokens)


@dataclass(frozen=True)
class Price:
    """USD per million tokens: uncached input, cached input, output."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at this price."""
        uncached = max(usage.input_tokens - usage.cached_input_tokens, 0)
        return (
            uncached * self.input
            + usage.cached_input_tokens * self.cached_input
            + usage.output_tokens * self.output
        ) / 1_000_000


FREE = Price(0.0, 0.0, 0.0)

TINKER_PRICES: dict[str, Price] = {
    "thinkingmachines/Inkling": Price(3.74, 0.374, 9.36),
    "thinkingmachines/Inkling:peft:262144": Price(7.48, 0.748, 18.72),
    "thinkingmachines/Inkling-Small": Price(1.16, 0.116, 2.88),
    "thinkingmachines/Inkling-Small:peft:262144": Price(2.32, 0.232, 5.78),
    "Qwen/Qwen3.8-27B": Price(1.86, 0.372, 5.595),
    "Qwen/Qwen3.8-27B:peft:262144": Price(2.48, 0.496, 7.46),
    "Qwen/Qwen3.6-35B-A3B": Price(0.54, 0.108, 1.335),
    "Qwen/Qwen3.6-27B": Price(1.86, 0.372, 5.595),
    "Qwen/Qwen3.5-397B-A17B": Price(3.0, 0.6, 7.5),
}

TRAINING = "train:"
"""The prefix that names a model's training price (``train:thinkingmachines/Inkling``): a training step
is reserved and charged like a model call, each token trained at it."""

TINKER_TRAIN_PRICES: dict[str, float] = {
    # Tinker's listed training price, without its limited-time discount.
    "thinkingmachines/Inkling": 11.22,
    # Not listed beside the sampling prices above: three times the prefill price, the ratio Tinker's
    # list shows for the models it prices both ways (so an estimate, erring on neither side).
    "thinkingmachines/Inkling-Small": 3.48,
    "Qwen/Qwen3.8-27B": 5.58,
    "Qwen/Qwen3.6-35B-A3B": 1.62,
    "Qwen/Qwen3.6-27B": 5.58,
    "Qwen/Qwen3.5-397B-A17B": 9.0,
}
"""USD per million tokens trained (every token of an example, targets or not), by base model."""

PUBLISHED: dict[str, Price] = {}
"""Prices an endpoint published for its own model ids (the Vercel AI Gateway's, read when the ``fx``
harness is made), consulted after the table."""


def publish(prices: dict[str, Price]) -> None:
    """Add an endpoint's published prices (``PUBLISHED``) for this process."""
    PUBLISHED.update(prices)


LOCAL = "local:"
"""The prefix of a model run in this process (``local:smollm2-135m``, ``local:PATH``): free."""


def price_of(model: str) -> Price | None:
    """The price of ``model``, or None when it is unknown (a checkpoint is priced as its base model). The
    name of a harness that declares itself free (one with no model, or one in this process), used as a
    model id, costs nothing."""
    if model.endswith(":free") or model.startswith((LOCAL, TRAINING + LOCAL)) or declared_free(model):
        return FREE
    if model.startswith(TRAINING):
        rate = TINKER_TRAIN_PRICES.get(model.removeprefix(TRAINING).split(":peft:")[0])
        return None if rate is None else Price(rate, rate, 0.0)
    if model.startswith("openrouter/"):
        return None  # OpenRouter's own prices are not in the table: free models only, or priced as another
    listed = TINKER_PRICES.get(model.removeprefix("tinker/"))  # ids are exact: Tinker's are case-sensitive
    return listed if listed is not None else PUBLISHED.get(model.removeprefix("fx/"))
