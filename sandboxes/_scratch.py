"""Scratch sandboxes: commands work on an in-memory copy of the directory, capped in size, and what they
write is thrown away with it.

For code nobody has read whose only result is what it prints (an author's case tests, hidden tests, the
vetting process): the host directory is shown read-only at ``SEED``, a tmpfs of ``Limits.disk_bytes`` is
the working directory, and the command starts by copying the one into the other. Nothing it writes
reaches the host's disk, and past the cap a write fails (its pages count towards the memory cap too); the
command's stderr then ends with ``DISK_NOTE``, so the caller knows the cap was reached.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._caps import size

SEED = "/.machine-seed"
"""Where the host directory is shown, read-only, for the copy."""
_SCRIPT = (
    'cp -a {seed}/. . || exit 125; "$@"; status=$?; '
    'if [ "$(stat -f -c %a .)" -le 1 ]; then echo "{note}" >&2; fi; exit $status'
)


def disk_note(disk_bytes: int) -> str:
    """The line a scratch command's stderr ends with when its files filled the directory."""
    return f"[the files it wrote filled its directory: the disk cap of {size(disk_bytes)}]"


def scratch_args(path: str, workdir: str, disk_bytes: int) -> list[str]:
    """The bwrap arguments that show ``path`` at ``SEED`` and a capped tmpfs at ``workdir``."""
    return ["--ro-bind", path, SEED, "--size", str(disk_bytes), "--tmpfs", workdir]


def scratch_argv(argv: Sequence[str], disk_bytes: int) -> list[str]:
    """``argv`` run after the copy, noting a full directory on its way out."""
    script = _SCRIPT.format(seed=SEED, note=disk_note(disk_bytes))
    return ["/bin/sh", "-c", script, "machine-scratch", *argv]
