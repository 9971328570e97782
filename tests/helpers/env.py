"""The environment tests run the real ``machine`` command in: the console script, and the settings of the
person running the tests that would change what a command does, scrubbed."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MACHINE_BIN = Path(sys.executable).parent / "machine"
SCRUBBED = (
    "MACHINE_WORKSPACE",
    "MACHINE_HARNESS",
    "MACHINE_JUDGE_MODEL",
    "MACHINE_ALLOW_SPEND_USD",
    "MACHINIST_MAX_BUDGET",
    "MACHINE_SERVER_TOKEN",
    "MACHINE_DASHBOARD_TOKEN",
    "MACHINE_DASHBOARD_STREAMS",
    "MACHINE_EVENTS",
    "TINKER_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_BASE_URL",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without ``SCRUBBED``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


def on_ci() -> bool:
    """Whether the tests run under CI (``CI=true``, any case or spacing): there a missing tool fails the test
    that needs it instead of skipping it, so a broken install step can never pass silently."""
    return os.environ.get("CI", "").strip().lower() == "true"


def installed_or_skip(*names: str, reason: str | None = None) -> None:
    """``pytest.importorskip`` of each of ``names`` (the calling test module, or test, skips where one is not
    installed) without the import: the module is only looked up, so a test module that needs a heavy extra
    (transformers, ray) adds nothing to the collection of the tests. Under CI (``on_ci``) a missing one is
    a failure, never a skip: ``make test`` installs every extra the tests use."""
    from importlib.util import find_spec

    import pytest

    for name in names:
        try:
            found = find_spec(name) is not None
        except ModuleNotFoundError:  # a dotted name whose parent is missing
            found = False
        if found:
            continue
        if on_ci():
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        pytest.skip(reason or f"could not import {name!r}: No module named {name!r}", allow_module_level=True)
