"""What tells the server that what it keeps between calls is stale: a signature of the machine files (a
machine loaded once is reused until one of its files changes) and the store's data version (a recent_runs
answer is reused until a run is written). Both cost a few system calls, not a load or a query of runs."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

Signature = tuple[tuple[str, int, int, int], ...]

MAX_DEPTH = 8
"""How deep under ``machines/`` the signature looks (a machine's name has a few parts)."""
MAX_ENTRIES = 20_000
"""Past this many files the signature gives up and says "changed" every time: nothing is reused."""
_SKIPPED = ("__pycache__",)


def signature(folder: Path, *files: Path) -> Signature | None:
    """The name, modification time, size and inode of every file and folder under ``folder`` (hidden ones
    and ``__pycache__`` left out) and of each of ``files``: equal signatures mean nothing was edited,
    added, removed or replaced. None when the tree is too large to say (treat it as changed)."""
    entries: list[tuple[str, int, int, int]] = [_stat(folder), *(_stat(file) for file in files)]
    pending = [(str(folder), 0)]
    while pending:  # bounded: MAX_ENTRIES files, MAX_DEPTH levels
        top, depth = pending.pop()
        try:
            with os.scandir(top) as found:
                for entry in found:
                    if entry.name.startswith(".") or entry.name in _SKIPPED:
                        continue
                    info = entry.stat()
                    entries.append((entry.path, info.st_mtime_ns, info.st_size, info.st_ino))
                    if depth < MAX_DEPTH and entry.is_dir():
                        pending.append((entry.path, depth + 1))
        except OSError:  # gone or unreadable meanwhile: its own entry (or absence) already says so
            continue
        if len(entries) > MAX_ENTRIES:
            return None
    entries.sort()
    return tuple(entries)


def _stat(path: Path) -> tuple[str, int, int, int]:
    try:
        info = path.stat()
    except OSError:
        return (str(path), -1, -1, -1)
    return (str(path), info.st_mtime_ns, info.st_size, info.st_ino)


class StoreVersion:
    """The store file's ``PRAGMA data_version`` read on a connection of its own, which writes nothing: the
    number changes whenever another connection commits, the server's own store connection included (the
    pragma does not change for a connection's own writes, hence the separate one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def current(self) -> int | None:
        """The version now; None when it cannot be read (nothing may then be reused)."""
        try:
            if self._db is None:
                if not self.path.is_file():
                    return None
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            found = self._db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            self.close()
            return None
        return int(found[0]) if found else None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
