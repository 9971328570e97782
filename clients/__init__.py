"""Harnesses, the agent loops that talk to models or replay them, and trainers, which fine-tune them.

``echo`` and ``scripted`` run here with no model; ``local`` runs a model in this process (any
``local:...`` model id picks it when no harness is named); the remote harnesses need a key; ``opencode``
and ``pi`` run the agent loop in those programs, with the run's tools served to them from this process.
Trainers (``tinker``, ``local``) are found by name in ``TRAINERS`` (``trainers``).
"""

from __future__ import annotations

# Imported by its path (``import clients`` from the repository root), this folder would load its modules
# a second time beside those of machine.clients, with a second copy of each class.
if __name__ != "machine.clients":
    raise ImportError(
        f"{__name__!r} is the folder of machine.clients, imported by its path: import machine.clients"
    )

import os
from pathlib import Path

from machine.errors import BadInputError, Fix
from machine.runs import LOCAL, Harness

from .trainers import TRAINERS, TrainerEntry, TrainerRequest, default_trainer_name, make_trainer

HARNESSES = ("echo", "scripted", "tinker", "openrouter", "fx", "openai", "opencode", "pi", "local")


def default_harness_name(model: str | None = None) -> str:
    """The harness used when none is named: ``MACHINE_HARNESS``, else ``local`` for a ``local:`` model,
    else ``tinker``."""
    if os.environ.get("MACHINE_HARNESS"):
        return os.environ["MACHINE_HARNESS"]
    return "local" if model is not None and model.startswith(LOCAL) else "tinker"


def make_harness(
    name: str | None = None,
    *,
    script: str | Path | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> Harness:
    """The harness called ``name`` (default: see ``default_harness_name``; ``model`` is the model the runs
    will use, when known)."""
    name = name or default_harness_name(model)
    if name not in HARNESSES:
        raise BadInputError(f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}")
    if name == "echo":
        from .echo import EchoHarness

        return EchoHarness()
    if name == "scripted":
        script = script or os.environ.get("MACHINE_SCRIPT") or None
        if script is None:
            raise BadInputError("the scripted harness needs a script", fixes=[Fix("script", "PATH")])
        from .scripted import ScriptedHarness

        return ScriptedHarness(script)
    if name == "opencode":
        from .opencode import OpencodeHarness

        return OpencodeHarness(base_url=base_url)
    if name == "pi":
        from .pi import PiHarness

        return PiHarness(base_url=base_url)
    if name == "local":
        from .local import LocalHarness

        return LocalHarness()
    from .chat import ChatCompletionsHarness, endpoint_for

    endpoint = endpoint_for(name, base_url=base_url)
    if name == "fx":  # the Gateway publishes its prices: the budget prices its models by them
        from machine.runs import publish_prices

        from ._gateway_prices import published_prices

        publish_prices(published_prices(endpoint))
    return ChatCompletionsHarness(endpoint)


__all__ = [
    "HARNESSES",
    "TRAINERS",
    "TrainerEntry",
    "TrainerRequest",
    "default_harness_name",
    "default_trainer_name",
    "make_harness",
    "make_trainer",
]
