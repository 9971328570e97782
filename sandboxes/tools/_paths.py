"""Paths for the file tools: confined to the run's directory, and opened so that a folder swapped
for a symlink meanwhile is caught."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path
from typing import Any

from machine.errors import BadInputError
from machine.runs import ToolContext, ToolFailure

from .._local import SandboxEscape


def _sandbox(ctx: ToolContext) -> Any:
    if ctx.sandbox is None:
        raise ToolFailure("this tool acts in the run's working directory, and this run has none")
    return ctx.sandbox


def _resolve(sandbox: Any, path: str) -> Path:
    """The host path of ``path``, or a ToolFailure saying that paths must stay inside."""
    try:
        resolved: Path = sandbox.resolve(path)
    except (SandboxEscape, BadInputError) as escape:
        raise ToolFailure(
            f"refused {path!r}: paths must stay inside the working directory ({escape}); "
            "give a relative path such as 'src/main.py'"
        ) from None
    except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a name the OS refuses
        raise ToolFailure(f"cannot use the path {path!r}: {error}") from None
    return resolved


def _shown(sandbox: Any, path: Path) -> str:
    """``path`` as the model names it: relative to the working directory, without resolving links."""
    try:
        return path.relative_to(sandbox.path).as_posix() or "."
    except ValueError:
        return str(sandbox.display(path))


def _missing(sandbox: Any, target: Path, asked: str) -> ToolFailure:
    """A not-found error that suggests the closest names and lists the nearest existing folder."""
    root: Path = sandbox.path
    folder = target.parent
    while folder != root and not folder.is_dir() and root in folder.parents:
        folder = folder.parent
    where = _shown(sandbox, folder)
    place = "the working directory" if where == "." else f"{where}/"
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ToolFailure(f"{asked!r} does not exist")
    message = f"{asked!r} does not exist."
    close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.6)
    if close:
        message += " Did you mean " + " or ".join(repr(_shown(sandbox, folder / n)) for n in close) + "?"
    if not names:
        return ToolFailure(f"{message} {place} is empty.")
    listed = [n + "/" if (folder / n).is_dir() and not (folder / n).is_symlink() else n for n in names[:30]]
    more = f" and {len(names) - 30} more" if len(names) > 30 else ""
    return ToolFailure(f"{message} {place} holds: {', '.join(listed)}{more}.")


SNIFF_BYTES = 8192
"""How much of a file or a reply is looked at to tell text from binary."""


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _opened_inside(sandbox: Any, fd: int) -> bool:
    """Whether an open file is really inside the sandbox. ``sandbox.resolve`` checked the path, but a
    command running at the same time could swap a folder for a symlink before the open; the kernel's
    name for the open file settles it. Where /proc is missing the resolve check stands alone."""
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return True
    root: Path = sandbox.path
    return real == root or root in real.parents


def _swapped(path: Path) -> ToolFailure:
    return ToolFailure(
        f"refused {path.name!r}: it now leads outside the working directory; paths must stay inside"
    )


def _open_read(sandbox: Any, target: Path) -> int:
    """A read-only descriptor of ``target``, never through a symlink swapped in after resolving."""
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)  # a FIFO must not block the tool
    if not _opened_inside(sandbox, fd):
        os.close(fd)
        raise _swapped(target)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolFailure(f"{target.name!r} is not a regular file (a pipe, socket or device)")
    return fd


def _read_inside(sandbox: Any, target: Path) -> bytes:
    with os.fdopen(_open_read(sandbox, target), "rb") as handle:
        return handle.read()


def _write_inside(sandbox: Any, target: Path, data: bytes) -> None:
    """Write ``target``, creating its folders, through a descriptor of its folder that is checked to
    be inside the sandbox before the file is created or truncated (and never through a symlink)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW)
    try:
        if not _opened_inside(sandbox, folder):
            raise _swapped(target.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW
        fd = os.open(target.name, flags, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolFailure(f"{target.name!r} is not a regular file (a pipe, socket or device)")
    os.ftruncate(fd, 0)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
