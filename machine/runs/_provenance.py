"""Where a run came from: the library version and the workspace's git revision."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path


@cache
def library_version() -> str:
    """The installed version of this library, recorded on every run (``importlib.metadata`` is slow to
    import, and only runs need it)."""
    from importlib import metadata

    try:
        return metadata.version("machine")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def git_revision(root: Path) -> str | None:
    """The commit checked out at ``root``, with ``+working-tree`` when its machines folder has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            # Bytecode that loading the machines writes is not a change to them.
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--",
                "machines",
                ":(exclude,glob)**/__pycache__/**",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = head.stdout.strip()
    return commit + ("+working-tree" if dirty.stdout.strip() else "")
