"""Which provider serves a model when another program runs the agent loop (opencode, pi).

Those hosts name a model ``provider/model``. Ours are Tinker ids (``Qwen/Qwen3.8-27B``, or with a ``tinker/``
prefix), ``openrouter/...`` ids, or ids at an endpoint given with ``--base-url``; anything else is passed
through as the host's own ``provider/model``. The key is handed to the host by the name of its environment
variable, never written into a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from machine.budget import TINKER_PRICES
from machine.errors import BadInputError, Fix, HarnessError

from .chat import OPENROUTER_URL, TINKER_SERVICE


@dataclass(frozen=True)
class Route:
    provider: str
    """The provider id the host sees: ``tinker``, ``openrouter``, ``endpoint``, or one of the host's own."""
    model: str
    """The model id at that provider."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint to declare to the host; None: a provider the host already knows."""
    key_env: str | None = None
    """The environment variable that holds the provider's API key, if it needs one."""

    @property
    def own(self) -> bool:
        """Whether the host serves this model with its own provider configuration."""
        return self.base_url is None


def is_tinker_model(model: str) -> bool:
    return model.startswith(("tinker/", "tinker://")) or model in TINKER_PRICES


def route_model(model: str, *, harness: str, base_url: str | None = None) -> Route:
    """Where ``harness`` sends ``model``; a missing key or an id no provider can serve says what to do."""
    if base_url:
        return Route("endpoint", model, base_url.rstrip("/"), "OPENAI_API_KEY")
    if is_tinker_model(model):
        if not os.environ.get("TINKER_API_KEY"):
            raise HarnessError(
                f"the {harness} harness runs Tinker models with TINKER_API_KEY: set it "
                "(export TINKER_API_KEY=...)",
                fixes=[Fix("base_url", "URL", "for another OpenAI-compatible endpoint")],
            )
        service = os.environ.get("TINKER_BASE_URL", TINKER_SERVICE).rstrip("/")
        return Route("tinker", model.removeprefix("tinker/"), f"{service}/oai/api/v1", "TINKER_API_KEY")
    if model.startswith("openrouter/"):
        if not os.environ.get("OPENROUTER_API_KEY"):
            raise HarnessError(
                f"the {harness} harness runs OpenRouter models with OPENROUTER_API_KEY: set it "
                "(export OPENROUTER_API_KEY=...)"
            )
        url = os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL).rstrip("/")
        return Route("openrouter", model.removeprefix("openrouter/"), url, "OPENROUTER_API_KEY")
    provider, slash, rest = model.partition("/")
    if not slash or not provider or not rest:
        raise BadInputError(
            f"the {harness} harness cannot tell who serves {model!r}: give a Tinker id, openrouter/<id> or "
            f"one of {harness}'s own provider/model ids",
            fixes=[Fix("base_url", "URL", "for an OpenAI-compatible endpoint")],
        )
    return Route(provider, rest)
