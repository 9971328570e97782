"""The spending log: a line for every settled spend, whoever spent (a command, a tool of the server, the
machinist). It is ``.machine/spending.jsonl`` (created 0600, its folders 0700), unless the workspace's
store keeps it (a PostgreSQL store, shared by a team): then it is the store's table, one log for all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from machine.errors import BadInputError
from machine.runs import SharedSpending, Store, kept_out_of_git

if TYPE_CHECKING:
    from machine.workspace import Workspace

SPENDING_LOG = "spending.jsonl"
"""The spending log's name in a workspace's data folder (``.machine/``), for every face."""
TAIL_BYTES = 512 * 1024
"""The most of the file read for its newest lines (a few thousand of them)."""


class SpendingLog(Protocol):
    """Where spending-log lines go, and are read back from."""

    def append(self, entry: dict[str, object]) -> None: ...

    def newest(self, limit: int) -> list[dict[str, Any]]: ...


@dataclass
class FileSpendingLog:
    """The log as a file of JSON lines, one write a line, so processes appending at once never mix."""

    path: Path

    def append(self, entry: dict[str, object]) -> None:
        line = json.dumps(entry, sort_keys=True) + "\n"
        try:
            missing = [
                folder for folder in (self.path.parent, *self.path.parent.parents) if not folder.exists()
            ]
            for made in reversed(missing):  # every folder made here is 0700, not only the last
                made.mkdir(mode=0o700, exist_ok=True)
                os.chmod(made, 0o700)  # mkdir's mode is filtered by the umask
                kept_out_of_git(made)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            raise BadInputError(
                f"could not write the spending log {self.path}: {exc.strerror or exc}"
            ) from exc

    def newest(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` lines, newest first, read from the end of the file."""
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            lines = handle.read().split(b"\n")
        return list(_entries(reversed(lines), limit))

    def every(self) -> list[dict[str, Any]]:
        """Every line, oldest first."""
        if not self.path.is_file():
            return []
        return list(_entries(iter(self.path.read_bytes().split(b"\n")), None))


@dataclass
class StoreSpendingLog:
    """The log as a shared store's table."""

    store: SharedSpending

    def append(self, entry: dict[str, object]) -> None:
        self.store.add_spending([entry])

    def newest(self, limit: int) -> list[dict[str, Any]]:
        return self.store.spending(limit)

    def every(self) -> list[dict[str, Any]]:
        return list(reversed(self.store.spending()))


def _entries(lines: Iterator[bytes], limit: int | None) -> Iterator[dict[str, Any]]:
    found = 0
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # an empty line, or the first of a tail, cut
        if isinstance(entry, dict):
            yield entry
            found += 1
            if found == limit:
                return


def log_of(store: Store, data_dir: Path) -> FileSpendingLog | StoreSpendingLog:
    """The spending log that goes with ``store``: its table when it keeps one, else the file in
    ``data_dir``."""
    if isinstance(store, SharedSpending):
        return StoreSpendingLog(store)
    return FileSpendingLog(data_dir / SPENDING_LOG)


@dataclass
class WorkspaceSpendingLog:
    """A workspace's spending log, found when first written or read (so making a policy opens no store)."""

    workspace: Workspace

    def append(self, entry: dict[str, object]) -> None:
        log_of(self.workspace.store, self.workspace.data_dir).append(entry)

    def newest(self, limit: int) -> list[dict[str, Any]]:
        return log_of(self.workspace.store, self.workspace.data_dir).newest(limit)


__all__ = [
    "SPENDING_LOG",
    "FileSpendingLog",
    "SpendingLog",
    "StoreSpendingLog",
    "WorkspaceSpendingLog",
    "log_of",
]
