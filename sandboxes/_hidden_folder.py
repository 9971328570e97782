"""A folder inside a sandbox that runs may not see (a workspace's ``.machine``), held by what it is.

Held by an open descriptor and its device and inode, not by its path: if a command renames the folder
or one above it, the next command still finds and covers it where it now is. Inside each command every
folder between the sandbox's root and the hidden one is a mount point, so no command can rename, move
or delete any of them while another command is being set up.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


class HiddenFolder:
    """One hidden folder of a sandbox rooted at ``root``."""

    def __init__(self, root: Path, relative: str) -> None:
        self.root = root
        self.path = root / relative
        """Where it was when the sandbox was made (where it is looked for until it exists)."""
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._pin()

    def _pin(self) -> None:
        """Hold the folder now at ``path``, if there is one (it is not followed through a symlink)."""
        try:
            fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        info = os.fstat(fd)
        self._close()
        self._fd, self._identity = fd, (info.st_dev, info.st_ino)

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = self._identity = None

    def __del__(self) -> None:
        self._close()

    def where(self) -> Path | None:
        """Where the folder is now, if it is inside the root; found through the descriptor."""
        if self._fd is None:
            self._pin()
        if self._fd is None or self._identity is None:
            return None
        try:
            now = Path(os.readlink(f"/proc/self/fd/{self._fd}"))
            info = os.lstat(now)
        except OSError:
            now = None
        if now is None or (info.st_dev, info.st_ino) != self._identity:  # deleted: hold what is there now
            self._close()
            self._pin()
            return self.path if self._fd is not None else None
        return now if now.is_relative_to(self.root) and now != self.root else None

    def holds(self, candidate: Path) -> bool:
        """Whether ``candidate`` (a resolved host path inside the root) is the folder or inside it,
        decided by identity, so no other name for it (a renamed parent, a symlink) gets past."""
        self.where()  # re-pins a folder made since
        if candidate.is_relative_to(self.path) or self._identity is None:
            return candidate.is_relative_to(self.path)
        for folder in (candidate, *candidate.parents):
            try:
                info = os.lstat(folder)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == self._identity:
                return True
            if folder == self.root:
                break
        return False


def cover_args(root: Path, workdir: str, hidden: list[HiddenFolder]) -> list[str]:
    """bwrap arguments, after the root is bound at ``workdir``, that cover each hidden folder with an
    empty read-only one and bind each folder above it (below the root) on itself, so that inside the
    command none of them can be renamed (a mount point cannot be)."""
    binds: dict[Path, None] = {}
    covers: list[str] = []
    for folder in hidden:
        where = folder.where()
        if where is None or not where.is_dir():
            continue
        relative = where.relative_to(root)
        binds.update(dict.fromkeys(Path(*relative.parts[:depth]) for depth in range(1, len(relative.parts))))
        covers.append(f"{workdir}/{relative.as_posix()}")
    argv: list[str] = []
    for above in sorted(binds, key=lambda path: len(path.parts)):  # every bind before any cover
        argv += ["--bind", str(root / above), f"{workdir}/{above.as_posix()}"]
    for inside in covers:
        argv += ["--tmpfs", inside, "--remount-ro", inside]
    return argv
