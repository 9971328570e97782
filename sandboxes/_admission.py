"""Putting a command under its caps before its first instruction, with no program in front of it.

A cgroup can be joined only by a running task, and a task may move itself; a child starts in the
cgroups of the thread that made it:

- cgroup v1 moves one thread alone (``tasks``), so the starting thread joins the command's groups,
  starts the command (vfork, then exec) and goes back to its own, all in one synchronous call on which
  nothing else runs (``moved``). A thread moving itself spares the kernel's lock on every thread group of
  the host, which ``cgroup.procs`` takes (an RCU grace period: milliseconds).
- cgroup v2 moves whole processes, and rlimits standing in for a missing group belong to the child alone:
  there the child does it between fork and exec (Popen's ``preexec_fn``, this object's ``__call__``),
  which costs a fork. It runs only a few system calls on what the parent prepared (no import, no lock,
  little allocation: other threads of the parent may hold locks it would wait on for ever). If any of it
  fails the child raises and never execs; Popen reports only a SubprocessError, so the child leaves which
  step failed, and its errno, in memory shared with the parent (``error``).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import resource
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

_RLIMIT_NAMES = {resource.RLIMIT_NPROC: "RLIMIT_NPROC", resource.RLIMIT_AS: "RLIMIT_AS"}


class NotAdmitted(Exception):
    """The command could not be put under its caps, so it was not run."""


class Admission:
    """How one command takes on its groups and rlimits: ``moves`` (v1: the group's ``tasks``, and the
    starting thread's own to go back to) through ``moved``; ``procs`` (v2 ``cgroup.procs``) and
    ``rlimits`` in the child, through ``child``. ``close`` once the command started, or failed to."""

    def __init__(
        self,
        moves: Sequence[tuple[Path, Path]] = (),
        procs: Sequence[Path] = (),
        rlimits: Sequence[tuple[int, int]] = (),
    ) -> None:
        self.moves = tuple(moves)
        self.procs = tuple(procs)
        self.rlimits = tuple(rlimits)
        """(resource, value): set as both the soft and the hard limit."""
        self._failed = mmap.mmap(-1, 2)  # shared with the child: the failed step + 1, and its errno
        self._fds: list[int] = []
        try:
            for path in self.procs:
                self._fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
        except OSError as error:
            self.close()
            raise NotAdmitted(error) from error

    @contextlib.contextmanager
    def moved(self) -> Iterator[None]:
        """This thread in the command's v1 groups, for as long as it starts the command, and no longer."""
        back: list[Path] = []
        try:
            for group, home in self.moves:
                try:
                    _join(group)
                except OSError as error:
                    raise NotAdmitted(error) from error
                back.append(home)
            yield
        finally:
            failed = None
            for home in reversed(back):
                try:
                    _join(home)
                except OSError as error:
                    failed = error
            if failed is not None:
                raise NotAdmitted(f"this thread could not leave the command's group: {failed}")

    @property
    def child(self) -> Callable[[], None] | None:
        """Popen's ``preexec_fn``: None where the child has nothing to do (it then starts with vfork)."""
        return self if self._fds or self.rlimits else None

    def __call__(self) -> None:
        """In the child, between fork and exec: join each v2 group, then set the rlimits."""
        step = 0
        try:
            for fd in self._fds:
                os.write(fd, b"0")
                os.close(fd)
                step += 1
            for which, value in self.rlimits:
                resource.setrlimit(which, (value, value))
                step += 1
        except OSError as error:
            self._failed[0] = step + 1
            self._failed[1] = min(error.errno or 0, 255)
            raise

    def error(self) -> OSError | None:
        """What the child could not do, after a start that failed; None where it did all of it."""
        step, number = self._failed[0] - 1, self._failed[1]
        if step < 0:
            return None
        if step < len(self.procs):
            return OSError(number, os.strerror(number), str(self.procs[step]))
        which = self.rlimits[step - len(self.procs)][0]
        return OSError(number, f"{os.strerror(number)} (setting {_RLIMIT_NAMES.get(which, which)})")

    def close(self) -> None:
        """Close the descriptors here (the child's went with its exec)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []


def _join(tasks: Path) -> None:
    """Move the calling thread into the v1 cgroup whose ``tasks`` file this is."""
    fd = os.open(tasks, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)
