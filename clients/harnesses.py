"""Every harness this package ships, as the entries its ``machine.harnesses`` entry points name: what each
is made from, its extra, and what it declares (free, replays a script, serves ``local:`` models, the
default). Light to import: each factory imports its room when it runs.

A new harness is one adapter room and one entry here (or in a package of its own) with its entry point.
"""

from __future__ import annotations

import os

from machine.budget import LOCAL
from machine.errors import BadInputError, Fix
from machine.runs import Harness, HarnessEntry, HarnessSetup, ModelAccess


def _echo(_setup: HarnessSetup) -> Harness:
    from .echo import EchoHarness

    return EchoHarness()


def _scripted(setup: HarnessSetup) -> Harness:
    script = setup.script or os.environ.get("MACHINE_SCRIPT") or None
    if script is None:
        raise BadInputError("the scripted harness needs a script", fixes=[Fix("script", "PATH")])
    from .scripted import ScriptedHarness

    return ScriptedHarness(script)


def _chat(name: str, order: int, *, publishes: bool = False, default: bool = False) -> HarnessEntry:
    """A chat-completions endpoint's harness; one whose endpoint ``publishes`` its prices has the budget
    price its models by them (the Gateway's)."""

    def make(setup: HarnessSetup) -> Harness:
        from machine.budget import publish_prices

        from .chat import ChatCompletionsHarness, endpoint_for, published_prices

        endpoint = endpoint_for(name, base_url=setup.base_url)
        if publishes:
            publish_prices(published_prices(endpoint))
        return ChatCompletionsHarness(endpoint)

    makes = "machine.clients.chat:ChatCompletionsHarness"
    return HarnessEntry(make, order=order, default=default, makes=makes)


def _opencode(setup: HarnessSetup) -> Harness:
    from .hosts.opencode import OpencodeHarness

    return OpencodeHarness(base_url=setup.base_url)


def _pi(setup: HarnessSetup) -> Harness:
    from .hosts.pi import PiHarness

    return PiHarness(base_url=setup.base_url)


def _local(_setup: HarnessSetup) -> Harness:
    from .local import LocalHarness

    return LocalHarness()


ECHO = HarnessEntry(_echo, free=True, replays=True, order=10, makes="machine.clients.echo:EchoHarness")
"""Replies with the input: no model, nothing spent."""
SCRIPTED = HarnessEntry(
    _scripted, free=True, replays=True, order=20, makes="machine.clients.scripted:ScriptedHarness"
)
"""Replays a script of turns: no model, nothing spent."""
TINKER = _chat("tinker", 30, default=True)
"""Tinker's OpenAI-compatible endpoint: the default harness."""
OPENROUTER = _chat("openrouter", 40)
FX = _chat("fx", 50, publishes=True)
"""The Vercel AI Gateway, which publishes its prices."""
OPENAI = _chat("openai", 60)
"""Any OpenAI-compatible endpoint (``OPENAI_BASE_URL``)."""
OPENCODE = HarnessEntry(_opencode, order=70, makes="machine.clients.hosts.opencode:OpencodeHarness")
PI = HarnessEntry(_pi, order=80, makes="machine.clients.hosts.pi:PiHarness")
LOCAL_MODELS = HarnessEntry(
    _local,
    extra="local",
    modules=("torch", "transformers"),
    free=True,
    serves=LOCAL,
    order=90,
    makes="machine.clients.local:LocalHarness",
)
"""A local model run in this process: free, and the harness of every ``local:`` model."""


def judges_models(harness: Harness | None) -> ModelAccess:
    """Model calls for the judges (the ``models`` part): the run harness's endpoint when it has one, else
    routed by model id; a chat harness lends its client, so the judges' calls reuse its connections."""
    from .chat import ChatClient, ModelRouter

    client = getattr(harness, "client", None)
    shared = client if isinstance(client, ChatClient) else None
    models: ModelAccess = ModelRouter(default=getattr(harness, "endpoint", None), client=shared)
    return models


__all__ = [
    "ECHO",
    "FX",
    "LOCAL_MODELS",
    "OPENAI",
    "OPENCODE",
    "OPENROUTER",
    "PI",
    "SCRIPTED",
    "TINKER",
    "judges_models",
]
