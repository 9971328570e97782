"""git for the tests that make a workspace a repository: a fixed author, no signing, bounded in time."""

from __future__ import annotations

import subprocess
from pathlib import Path

AUTHOR = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root``; its standard output as printed (a failure raises)."""
    done = subprocess.run(
        ["git", *AUTHOR, *args], cwd=root, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout
