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
