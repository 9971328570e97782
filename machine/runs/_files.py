"""Files the library writes and paths it reads back, safely beside what others may plant: a file is written
whole or not at all, through a temporary file of a random name that is created exclusively and never
through a symlink (``O_CREAT | O_EXCL | O_NOFOLLOW``), then renamed over the target, which replaces a
symlink at the target rather than writing where it points; and a path a stored record names is read only
when, with every symlink resolved, it stays inside the folder it belongs to."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from machine.errors import BadInputError

EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
"""A new file, never one that is there already, and never a symlink's target."""


def _temporary(path: Path, mode: int) -> tuple[Path, int]:
    """A new file beside ``path`` under a name nobody can guess ahead of time, and its descriptor."""
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            return temp, os.open(temp, EXCLUSIVE, mode)
        except FileExistsError:  # a name already taken (or planted): draw another
            continue


@contextmanager
def atomic_text(path: Path, *, private: bool = False) -> Iterator[TextIO]:
    """A text handle whose contents replace ``path`` when the block ends without an error (and leave no
    trace when it raises). ``private``: the file is readable by its owner only (0600), else the mode new
    files get (0666 less the umask)."""
    mode = 0o600 if private else 0o666
    temp, fd = _temporary(path, mode)
    try:
        if private:
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace ``path`` with ``data``, whole, through a fresh temporary file (see the module)."""
    mode = 0o600 if private else 0o666
    temp, fd = _temporary(path, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def open_new(path: Path, *, append: bool = False) -> TextIO:
    """``path`` opened for writing readable by its owner only, created if absent, never through a
    symlink planted at its name: appended to, or written over."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def kept_out_of_git(folder: Path) -> None:
    """Give a workspace's ``.machine`` folder a ``.gitignore`` of ``*`` once it exists, so ``git add -A``
    in the project never commits the store (runs hold prompts, outputs and tool results)."""
    if folder.name != ".machine" or not folder.is_dir():
        return
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text("# machine's store, spending log and sandboxes: never committed\n*\n")
        except OSError:  # a read-only folder is refused where the store is written
            return


def confined(text: str, root: Path, *, named_in: Path, what: str) -> Path:
    """The path ``text`` names (a relative one read from ``root``) with every symlink resolved, which
    must lie inside ``root``: a stored record that names a path elsewhere (absolute, climbing out with
    ``..``, or through a symlink that leads out) is refused, naming the record and the path."""
    base = root.resolve()
    given = Path(text).expanduser()
    where = (given if given.is_absolute() else base / given).resolve()
    if where == base or where.is_relative_to(base):
        return where
    raise BadInputError(
        f"{named_in} names {what} {text!r}, which is outside {base} ({where}): the paths a record holds "
        "stay inside its workspace; remove that line from the file, or start afresh instead of reusing it"
    )
