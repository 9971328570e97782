"""Ending a server a test started: asked to stop, then killed if it does not within the time given."""

from __future__ import annotations

import subprocess
from typing import Any


def end(process: subprocess.Popen[Any], timeout_s: float = 15.0) -> None:
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)
