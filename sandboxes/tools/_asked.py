"""A change to a person's own files, made only after their yes (``machine.runs.EditGate``): the file tools
work out the whole change first (the text before and after), the gate shows it and asks, and only then
is it written, atomically (a file beside the target, renamed over it), and only if the file is still what
the person was shown. Nothing of this runs where nobody is asked (``--edits auto``, a fresh sandbox)."""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from machine.runs import EditGate, EditProposal, ToolContext, ToolFailure

from ._paths import _NOFOLLOW, _opened_inside, _read_inside, _swapped

MAX_SHOWN_BYTES = 10_000_000
"""The most of a file read to show what a write replaces (``edit_file`` refuses larger files too)."""


def asking(ctx: ToolContext) -> EditGate | None:
    """The run's gate where a change must be asked about or refused; None where it is just made."""
    gate = ctx.edits
    return None if gate is None or gate.mode == "auto" else gate


@dataclass(frozen=True)
class Change:
    """A file's whole change, worked out before anything is written."""

    target: Path
    shown: str
    """The path relative to the working directory, as the person and the model see it."""
    before: bytes | None
    """The file as it was (None: a new file)."""
    after: bytes
    said: str
    """What the tool tells the model once the change is made."""

    def proposal(self, tool: str) -> EditProposal:
        def text(data: bytes | None) -> str | None:
            return None if data is None else data.decode("utf-8", errors="replace")

        return EditProposal(tool=tool, path=self.shown, before=text(self.before), after=text(self.after))


def current(sandbox: Any, target: Path, shown: str) -> bytes | None:
    """``target``'s bytes now (None: there is no such file), refused when too large to show whole."""
    if not target.exists() and not target.is_symlink():
        return None
    if target.is_file() and target.stat().st_size > MAX_SHOWN_BYTES:
        raise ToolFailure(f"{shown} is over {MAX_SHOWN_BYTES:,} bytes, too large to show as a change")
    try:
        return _read_inside(sandbox, target)
    except OSError as error:
        raise ToolFailure(f"cannot read {shown!r}: {error.strerror or error}") from None


def _replace_inside(sandbox: Any, change: Change) -> None:
    """Write ``change`` atomically: a new file beside the target (in the same folder, opened through a
    descriptor checked to be inside the sandbox) renamed over it, keeping an existing file's mode."""
    target = change.target
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW)
    try:
        if not _opened_inside(sandbox, folder):
            raise _swapped(target.parent)
        try:
            mode = stat.S_IMODE(os.stat(target.name, dir_fd=folder, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            mode = 0o644
        temporary = f".{target.name}.{secrets.token_hex(4)}.machine-edit"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(change.after)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(temporary, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def _apply(sandbox: Any, change: Change) -> str:
    if current(sandbox, change.target, change.shown) != change.before:
        raise ToolFailure(
            f"{change.shown} changed while the person was asked; nothing was written: read it again"
        )
    try:
        _replace_inside(sandbox, change)
    except OSError as error:
        raise ToolFailure(f"cannot write {change.shown!r}: {error.strerror or error}") from None
    return change.said


async def asked_then_made(sandbox: Any, gate: EditGate, tool: str, change: Change) -> str:
    """Ask about ``change``; made (atomically) only after the yes."""
    refused = await gate.refusal(change.proposal(tool))
    if refused is not None:
        raise ToolFailure(refused)
    return await anyio.to_thread.run_sync(_apply, sandbox, change)


__all__ = ["Change", "asked_then_made", "asking", "current"]
