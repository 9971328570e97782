"""Harnesses: the agent loops that talk to models or replay them.

``echo`` and ``scripted`` run here with no model; the remote harnesses need a key.
"""

from __future__ import annotations

import os
from pathlib import Path

from machine._errors import BadInputError, HarnessError
from machine._harness import Harness

HARNESSES = ("echo", "scripted", "tinker", "openrouter", "openai")
REMOTE_KEYS = {"tinker": "TINKER_API_KEY", "openrouter": "OPENROUTER_API_KEY"}


def default_harness_name() -> str:
    return os.environ.get("MACHINE_HARNESS") or "tinker"


def make_harness(name: str | None = None, *, script: str | Path | None = None) -> Harness:
    """The harness called ``name`` (default: ``MACHINE_HARNESS``, else ``tinker``)."""
    name = name or default_harness_name()
    if name not in HARNESSES:
        raise BadInputError(f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}")
    if name == "echo":
        from .echo import EchoHarness

        return EchoHarness()
    if name == "scripted":
        if script is None:
            raise BadInputError("the scripted harness needs a script: pass --script PATH")
        from .scripted import ScriptedHarness

        return ScriptedHarness(script)
    key = REMOTE_KEYS.get(name)
    if key and not os.environ.get(key):
        raise HarnessError(
            f"the {name} harness needs {key}: set it (export {key}=...), "
            "or pass --harness echo for a free dry run (or --harness scripted --script FILE)"
        )
    if name == "openai" and not os.environ.get("OPENAI_BASE_URL"):
        raise HarnessError(
            "the openai harness needs an endpoint: set OPENAI_BASE_URL, or pass --harness echo"
        )
    raise HarnessError(
        f"the {name} harness talks to a model service, and this build of machine has no model client yet; "
        "use --harness echo or --harness scripted --script FILE"
    )


__all__ = ["HARNESSES", "default_harness_name", "make_harness"]
