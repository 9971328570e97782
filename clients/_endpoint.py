"""Where a chat-completions harness sends its calls: the endpoint, read from the environment.

A missing key or URL is an error that says what to set, so a run fails before its first call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from machine.errors import BadInputError, Fix, HarnessError

TINKER_SERVICE = "https://tinker.thinkingmachines.dev/services/tinker-prod"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
FX_URL = "https://ai-gateway.vercel.sh/v1"
"""The Vercel AI Gateway's OpenAI-compatible endpoint (the ``fx`` harness)."""
ROUTED = ("tinker", "openrouter", "fx")
"""Harnesses whose name, as a prefix of a model id (``fx/anthropic/claude-sonnet-5.5``), routes it there."""
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_TOKENS = 16_384
"""The most output tokens one call may use (``max_tokens``), unless ``MACHINE_MAX_TOKENS`` says otherwise:
it bounds what the budget reserves for each call."""


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint: its URL and key, and how calls to it are timed and retried."""

    harness: str
    base_url: str
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    send_reasoning: bool = False
    """Send earlier steps' reasoning back with the conversation (Tinker keeps it in the prompt)."""
    headers: dict[str, str] = field(default_factory=dict)
    max_tokens: int = DEFAULT_MAX_TOKENS
    """Sent with every call: the reply may use no more output tokens than this."""

    def model_id(self, model: str) -> str:
        """The id the endpoint knows (a ``tinker/``, ``openrouter/`` or ``fx/`` prefix names the harness).

        ``openai/`` is not a routing prefix: it is part of real ids (``openai/gpt-oss-20b`` on vLLM,
        ``openai/gpt-4o`` on a gateway), so the openai harness sends the id as given."""
        prefix = self.harness + "/"
        routed = self.harness in ROUTED and model.startswith(prefix)
        return model[len(prefix) :] if routed else model


def model_timeout() -> float:
    """Seconds one model call may take: ``MACHINE_MODEL_TIMEOUT``, else the default."""
    raw = os.environ.get("MACHINE_MODEL_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise BadInputError(f"MACHINE_MODEL_TIMEOUT={raw!r} is not a number of seconds") from None


def model_max_tokens() -> int:
    """Output tokens one call may use: ``MACHINE_MAX_TOKENS``, else the default."""
    raw = os.environ.get("MACHINE_MAX_TOKENS")
    if not raw:
        return DEFAULT_MAX_TOKENS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= 1_000_000:
        raise BadInputError(f"MACHINE_MAX_TOKENS={raw!r} is not a whole number of tokens from 1 to 1000000")
    return value


DRY_RUN = (Fix("harness", "echo", "for a free dry run"),)
"""What else a run can do when its endpoint cannot be reached."""


def endpoint_for(harness: str, *, base_url: str | None = None, fixes: Sequence[Fix] = DRY_RUN) -> Endpoint:
    """The endpoint of a remote harness from the environment; a missing key or URL says what to set
    (and ``fixes``, what else to do)."""
    timeout, most = model_timeout(), model_max_tokens()
    if harness == "tinker":
        key = os.environ.get("TINKER_API_KEY")
        if not key:
            raise HarnessError(
                "the tinker harness needs TINKER_API_KEY: set it (export TINKER_API_KEY=...)", fixes=fixes
            )
        service = os.environ.get("TINKER_BASE_URL", TINKER_SERVICE).rstrip("/")
        url = base_url or f"{service}/oai/api/v1"
        return Endpoint("tinker", url, key, timeout_s=timeout, send_reasoning=True, max_tokens=most)
    if harness == "openrouter":
        key = os.environ.get("OPENROUTER_API_KEY")
        if not key:
            raise HarnessError(
                "the openrouter harness needs OPENROUTER_API_KEY: set it (export OPENROUTER_API_KEY=...)",
                fixes=fixes,
            )
        url = base_url or os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL)
        return Endpoint("openrouter", url, key, timeout_s=timeout, max_tokens=most)
    if harness == "fx":
        key = os.environ.get("AI_GATEWAY_API_KEY")
        if not key:
            raise HarnessError(
                "the fx harness (the Vercel AI Gateway) needs AI_GATEWAY_API_KEY: set it "
                "(export AI_GATEWAY_API_KEY=...)",
                fixes=fixes,
            )
        url = base_url or os.environ.get("AI_GATEWAY_BASE_URL", FX_URL)
        return Endpoint("fx", url, key, timeout_s=timeout, max_tokens=most)
    if harness == "openai":
        given = base_url or os.environ.get("OPENAI_BASE_URL")
        if not given:
            raise HarnessError(
                "the openai harness needs an endpoint: set OPENAI_BASE_URL (for example "
                "http://127.0.0.1:11434/v1 for Ollama)",
                fixes=[Fix("base_url", "URL", "to name the endpoint"), *fixes],
            )
        return Endpoint("openai", given, os.environ.get("OPENAI_API_KEY"), timeout_s=timeout, max_tokens=most)
    raise BadInputError(f"{harness!r} is not a chat-completions harness (tinker, openrouter, fx or openai)")
