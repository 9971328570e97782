"""What goes wrong with a store file, in words a person can act on: a folder, not a database, damaged,
read-only, its disk full. ``SQLiteStore`` turns every SQLite and file-system failure into one of these,
so no face shows a traceback for a store it cannot use."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from machine.errors import StoreError

# SQLite's primary result codes (the low byte of an extended one).
SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL = 3, 8, 10, 11, 13
SQLITE_CANTOPEN, SQLITE_NOTADB = 14, 26

RECOVER = "sqlite3 {path} .recover | sqlite3 recovered.db"
"""How to save what a damaged store still holds (the ``sqlite3`` shell's ``.recover``)."""


def damaged(path: Path, detail: str) -> StoreError:
    return StoreError(
        f"the store {path} is damaged ({detail}), so nothing was written to it: move it aside and "
        f"restore it from a backup, or save what it still holds with `{RECOVER.format(path=path)}` "
        "and put recovered.db in its place"
    )


def read_only(path: Path) -> StoreError:
    return StoreError(
        f"the store {path} is read-only: make the file and its folder writable by this user "
        f"(chmod u+w {path} {path.parent}; a read-only file system must be mounted read-write), "
        "or use a workspace whose store can be written"
    )


def is_read_only(path: Path) -> bool:
    """Whether this process cannot write ``path`` or make files beside it (its WAL and index)."""
    folder = path.parent
    if folder.exists() and not os.access(folder, os.W_OK):
        return True
    return path.exists() and not os.access(path, os.W_OK)


def not_a_file(path: Path) -> StoreError:
    return StoreError(
        f"the store {path} is a folder, not a file: move that folder aside (a new store is made in "
        "its place) or use another workspace"
    )


def from_os(path: Path, error: OSError) -> StoreError:
    """A failure to make, open or chmod the store file or its folder."""
    if is_read_only(path) or error.errno in (30, 13):  # EROFS, EACCES
        return read_only(path)
    if error.errno == 28:  # ENOSPC
        return full(path, error.strerror or str(error))
    return StoreError(f"the store {path} cannot be opened ({error.strerror or error}): check its folder")


def full(path: Path, detail: str) -> StoreError:
    return StoreError(
        f"the store {path} could not be written: the disk is full ({detail}); free space on its disk"
    )


def from_sqlite(path: Path, error: sqlite3.Error) -> StoreError:
    """``error`` from SQLite, said in the store's terms and with what to do."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    detail = str(error)
    if code == SQLITE_NOTADB:
        return StoreError(
            f"{path} is not a SQLite database, so it cannot be the store: move it aside (a new store is "
            "made in its place) or restore the store from a backup"
        )
    if code == SQLITE_CORRUPT:
        return damaged(path, detail)
    if code == SQLITE_FULL:
        return full(path, detail)
    if code in (SQLITE_READONLY, SQLITE_PERM) or (code == SQLITE_CANTOPEN and is_read_only(path)):
        return read_only(path)
    if path.is_dir():
        return not_a_file(path)
    if code == SQLITE_CANTOPEN:
        return StoreError(f"the store {path} cannot be opened ({detail}): check that its folder exists")
    if code == SQLITE_IOERR:
        return StoreError(f"the store {path} could not be read or written ({detail}): check its disk")
    return StoreError(f"the store {path} failed: {detail}")
