"""Small real file systems for the store's fault tests: a tmpfs of a few hundred KB that a suite fills, and
the same mounted read-only. Mounting needs root (or CAP_SYS_ADMIN); without it the test is skipped with
why, except under CI=true, where it fails so a CI without the capability cannot pass silently."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)


def _cannot(why: str) -> None:
    message = f"cannot mount a small tmpfs here ({why}): run as root, or give the tests CAP_SYS_ADMIN"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def small_tmpfs(folder: Path, size_kib: int) -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size_kib`` KiB for the block; unmounted however the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mounted = _mount("-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "tmpfs", str(folder))
    except FileNotFoundError:
        _cannot("no mount command")
    if mounted.returncode != 0:
        _cannot(mounted.stderr.strip() or f"mount exited {mounted.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


def remount_read_only(folder: Path) -> None:
    """Make the tmpfs at ``folder`` read-only: even root cannot write it then."""
    done = _mount("-o", "remount,ro", str(folder))
    if done.returncode != 0:
        _cannot(done.stderr.strip() or "remount failed")
