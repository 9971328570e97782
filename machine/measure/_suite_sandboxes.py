"""Each suite's runs make their sandboxes in a folder of the suite's own, ``.machine/sandboxes/suite-<id>``,
held by a lock for as long as the suite runs. A suite killed outright (SIGKILL, a power cut) cannot
remove its runs' sandboxes; the lock dies with it, so ``--resume`` knows the folder is abandoned and
clears it before it runs the rest. A suite still running elsewhere keeps its lock, and is not resumed
twice at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from machine.errors import BadInputError
from machine.workspace import Workspace

LOCK = ".lock"


@contextlib.contextmanager
def suite_sandboxes(workspace: Workspace, suite_id: str, *, resuming: bool) -> Iterator[Workspace]:
    """``workspace`` with its runs' sandboxes in the suite's own folder, locked while the suite runs;
    a resumed suite's leftovers are removed first. The folder goes once the suite is done with it."""
    folder = workspace.data_dir / "sandboxes" / f"suite-{suite_id}"
    try:
        workspace.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for private in (folder.parent, folder):
            private.mkdir(exist_ok=True, mode=0o700)
        lock = os.open(folder / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as error:
        raise BadInputError(
            f"the sandbox folder {folder} cannot be made ({error.strerror or error}): check its disk"
        ) from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInputError(
                f"suite {suite_id} is running in another process: let it finish (or stop it) first"
            ) from None
        if resuming and not workspace.keep_sandboxes:
            clear(folder)
        try:
            yield workspace.using(sandbox_dir=folder)
        finally:
            if not any(entry.name != LOCK for entry in folder.iterdir()):  # no sandbox kept: folder goes
                with contextlib.suppress(OSError):
                    (folder / LOCK).unlink()
                    folder.rmdir()
    finally:
        os.close(lock)


def clear(folder: Path) -> None:
    """Remove every sandbox in ``folder`` (not its lock), even folders a command made read-only."""
    for entry in folder.iterdir():
        if entry.name != LOCK:
            _remove(entry)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    os.chmod(path, stat.S_IRWXU)
    for root, folders, _files in os.walk(path):  # a run's command may have made folders read-only
        for name in folders:
            inner = os.path.join(root, name)
            if not os.path.islink(inner):
                os.chmod(inner, stat.S_IRWXU)
    shutil.rmtree(path)
