"""Caps on a sandboxed command tree: how many processes it may run and how much memory it may use.

Each command gets a cgroup of its own where the host offers a writable one (v2 where its ``pids`` and
``memory`` controllers can be used, else the v1 controllers), removed after the command; what is left in
it at the end is killed through it. Where no cgroup is writable the caps fall back to rlimits, which are
weaker, and ``IsolationReport.notes`` says so. docs/sandboxes.md describes the result.
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import signal
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import anyio

from machine.errors import BadInputError

from ._admission import Admission

DEFAULT_PROCESSES = 256
"""Processes (threads included) a command tree may run at once: enough for a build with ``make -j``
or a test runner with workers, far below a host's process table."""
DEFAULT_MEMORY_BYTES = 2 * 1024**3
"""Memory a command tree may use (RAM and swap; files it writes to the sandbox's ``/tmp`` count)."""
DEFAULT_DISK_BYTES = 512 * 1024**2
"""What the commands of a scratch sandbox may write in its directory (an in-memory copy of it)."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
MIN_PROCESSES = 8
"""bubblewrap itself takes three of the command tree's processes."""
MIN_MEMORY_BYTES = 16 * 1024**2
PREFIX = "machine-sandbox-"
REMOVE_WITHIN_S = 3.0


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command tree may use at once."""

    processes: int = DEFAULT_PROCESSES
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    disk_bytes: int = DEFAULT_DISK_BYTES
    """Of a scratch sandbox (``LocalSandbox.scratch``): what its commands may write in its directory."""
    cgroup_root: Path | None = CGROUP_ROOT
    """Where the host's cgroup file systems are mounted; None uses rlimits only."""

    def __post_init__(self) -> None:
        for name, value, least in (
            ("processes", self.processes, MIN_PROCESSES),
            ("memory_bytes", self.memory_bytes, MIN_MEMORY_BYTES),
            ("disk_bytes", self.disk_bytes, MIN_MEMORY_BYTES),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise BadInputError(
                    f"sandbox limit {name} must be a whole number of at least {least:,}, not {value!r}"
                )


@dataclass(frozen=True)
class IsolationReport:
    """What a sandbox's commands are isolated from and capped at here, and by what (``str()`` says it)."""

    isolated: bool
    """Whether commands run under bubblewrap."""
    processes: int | None
    """The cap on processes (threads included) of one command tree; None where nothing enforces one."""
    memory_bytes: int | None
    """The cap on memory: of the whole tree by a cgroup, of each process by RLIMIT_AS."""
    processes_by: str | None
    memory_by: str | None
    """``cgroup v2``, ``cgroup v1``, ``RLIMIT_NPROC`` / ``RLIMIT_AS``, or None."""
    notes: tuple[str, ...] = ()
    """What is weaker than a cgroup's caps, or missing, in plain words."""

    def __str__(self) -> str:
        head = "isolated by bubblewrap" if self.isolated else "NOT isolated (no bubblewrap)"
        caps = []
        if self.processes is not None:
            caps.append(f"processes capped at {self.processes:,} by {self.processes_by}")
        if self.memory_bytes is not None:
            caps.append(f"memory capped at {size(self.memory_bytes)} by {self.memory_by}")
        return "; ".join([head, *caps, *self.notes])


@dataclass(frozen=True)
class _Controller:
    """One cgroup file system in which command groups can be made: v2 (both caps) or one v1 controller."""

    version: int
    parent: Path
    """The cgroup of this process, in which each command's group is made."""
    name: str
    """``pids`` or ``memory`` for v1; ``pids+memory`` for v2."""


@dataclass(frozen=True)
class _Plan:
    processes: _Controller | None
    memory: _Controller | None

    @property
    def controllers(self) -> tuple[_Controller, ...]:
        return tuple(dict.fromkeys(c for c in (self.processes, self.memory) if c is not None))


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per controller (``""`` for v2), from /proc/self/cgroup."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                found[name] = path
    return found


def _usable(parent: Path) -> bool:
    """Whether a group can be made (and removed) in ``parent``: tried, not guessed from permissions."""
    probe = parent / f"{PREFIX}probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    _remove_stale(parent)
    return True


def _remove_stale(parent: Path) -> None:
    """Groups left by a process that was killed before it could remove them (empty, so removable)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if entry.name.startswith(PREFIX) and owner.isdigit() and not Path("/proc", owner).exists():
                with contextlib.suppress(OSError):
                    entry.rmdir()


def _v2(root: Path, own: dict[str, str]) -> _Controller | None:
    mount = root if (root / "cgroup.controllers").is_file() else root / "unified"
    if "" not in own or not (mount / "cgroup.controllers").is_file():
        return None
    parent = mount / own[""].lstrip("/")
    wanted = {"pids", "memory"}
    try:
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
        if not wanted <= enabled and wanted <= set((parent / "cgroup.controllers").read_text().split()):
            # refused where this cgroup holds processes (v2 allows none beside child groups)
            (parent / "cgroup.subtree_control").write_text("+pids +memory")
            enabled = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if wanted <= enabled and _usable(parent):
        return _Controller(2, parent, "pids+memory")
    return None


def _v1(root: Path, own: dict[str, str], name: str) -> _Controller | None:
    if name not in own:
        return None
    parent = root / name / own[name].lstrip("/")
    if (root / name / "cgroup.procs").is_file() and _usable(parent):
        return _Controller(1, parent, name)
    return None


@cache
def _plan(root: Path | None) -> _Plan:
    """Where this process can cap command trees, found once per process."""
    if root is None:
        return _Plan(None, None)
    own = _own_cgroups()
    unified = _v2(root, own)
    if unified is not None:
        return _Plan(unified, unified)
    return _Plan(_v1(root, own, "pids"), _v1(root, own, "memory"))


@cache
def _nproc_applies() -> bool:
    """Whether RLIMIT_NPROC binds this process's children: never for the host's root (the kernel
    skips the check for uid 0 and for CAP_SYS_RESOURCE or CAP_SYS_ADMIN)."""
    status = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            status[key] = value.split()
    effective = int(status.get("CapEff", ["0"])[0], 16)
    if effective & ((1 << 24) | (1 << 21)):
        return False
    uid = os.getuid()
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/uid_map").read_text().splitlines():  # the uid outside our namespace
            inside, outside, count = (int(part) for part in line.split())
            if inside <= uid < inside + count:
                uid = outside + uid - inside
    return uid != 0


def report(limits: Limits, isolated: bool) -> IsolationReport:
    """How ``limits`` are enforced here, with what is weaker than a cgroup said in plain words."""
    plan = _plan(limits.cgroup_root)
    notes: list[str] = []
    processes_by = memory_by = None
    if plan.processes is not None:
        processes_by = f"cgroup v{plan.processes.version}"
    elif _nproc_applies():
        processes_by = "RLIMIT_NPROC"
        notes.append(
            "no writable cgroup for processes: RLIMIT_NPROC counts every process of this user, so a "
            f"command may start {limits.processes:,} more than the user already runs"
        )
    else:
        notes.append(
            "processes are NOT capped: no writable cgroup, and RLIMIT_NPROC is not enforced for root "
            "(or a process with CAP_SYS_RESOURCE); run machine as an ordinary user or give it a cgroup"
        )
    if plan.memory is not None:
        memory_by = f"cgroup v{plan.memory.version}"
    else:
        memory_by = "RLIMIT_AS"
        notes.append(
            "no writable cgroup for memory: RLIMIT_AS caps each process's address space, not the whole "
            "command tree, and programs that reserve much address space (Java) may fail to start"
        )
    return IsolationReport(
        isolated,
        limits.processes if processes_by else None,
        limits.memory_bytes,
        processes_by,
        memory_by,
        tuple(notes),
    )


@dataclass
class CommandGroup:
    """The cgroups (or rlimits) of one command tree, from before it runs until after it is gone."""

    limits: Limits
    plan: _Plan
    dirs: dict[_Controller, Path] = field(default_factory=dict)

    @classmethod
    def make(cls, limits: Limits) -> CommandGroup:
        """Make the command's groups with their caps set; nothing is left behind if that fails."""
        group = cls(limits, _plan(limits.cgroup_root))
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            for controller in group.plan.controllers:
                folder = controller.parent / name
                folder.mkdir()
                group.dirs[controller] = folder
                group._set_caps(controller, folder)
        except OSError:
            group._rmdir_all()
            raise
        return group

    def _set_caps(self, controller: _Controller, folder: Path) -> None:
        memory = str(self.limits.memory_bytes)
        if controller is self.plan.processes:
            (folder / "pids.max").write_text(str(self.limits.processes))
        if controller is self.plan.memory and controller.version == 2:
            (folder / "memory.max").write_text(memory)
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")
        elif controller is self.plan.memory:
            (folder / "memory.limit_in_bytes").write_text(memory)
            if (folder / "memory.memsw.limit_in_bytes").exists():  # swap counts too
                (folder / "memory.memsw.limit_in_bytes").write_text(memory)

    def admission(self) -> Admission:
        """What puts the command under the caps before it runs anything (``Admission``): its groups,
        and rlimits for what no group caps."""
        rlimits = []
        if self.plan.processes is None and _nproc_applies():  # for root it would only cost the scan
            wanted = _user_tasks() + 1 + self.limits.processes  # + 1: the command, not yet started
            rlimits.append((resource.RLIMIT_NPROC, _bounded(resource.RLIMIT_NPROC, wanted)))
        if self.plan.memory is None:
            rlimits.append((resource.RLIMIT_AS, _bounded(resource.RLIMIT_AS, self.limits.memory_bytes)))
        v1 = [(folder / "tasks", c.parent / "tasks") for c, folder in self.dirs.items() if c.version == 1]
        v2 = [folder / "cgroup.procs" for c, folder in self.dirs.items() if c.version == 2]
        return Admission(v1, v2, rlimits)

    def kill(self) -> None:
        """SIGKILL every process in the groups: the whole tree, wherever it went in it."""
        for folder in self.dirs.values():
            if (folder / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    (folder / "cgroup.kill").write_text("1")
                continue
            for _ in range(100):  # each round kills what the last one saw; the cap bounds the rest
                try:
                    listed = (folder / "cgroup.procs").read_text().split()
                except OSError:
                    break
                # never this process: one of its threads is in the group while it starts the command
                pids = [pid for pid in map(int, listed) if pid != os.getpid()]
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)

    def reached(self) -> dict[str, str]:
        """The caps the command tree reached (``processes``, ``memory``), each with a note for its stderr."""
        said = {}
        for controller, folder in self.dirs.items():
            if controller is self.plan.processes and _count(folder / "pids.events", "max"):
                cap = f"{self.limits.processes:,} processes"
                said["processes"] = f"[process starts were refused: the cap of {cap}]"
            oom = "memory.events" if controller.version == 2 else "memory.oom_control"
            if controller is self.plan.memory and _count(folder / oom, "oom_kill"):
                said["memory"] = f"[a process was killed: the memory cap of {size(self.limits.memory_bytes)}]"
        return said

    async def remove(self) -> None:
        """Kill what is left and remove the groups, waiting (bounded) for the last exits."""
        self.kill()
        with anyio.move_on_after(REMOVE_WITHIN_S):
            delay = 0.005
            while not self._rmdir_all():
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.1)
                self.kill()

    def _rmdir_all(self) -> bool:
        for controller, folder in list(self.dirs.items()):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            del self.dirs[controller]
        return not self.dirs


def _count(path: Path, key: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def size(count: int) -> str:
    """A number of bytes as a person reads it (2 GiB, 512 MiB)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2)):
        if count >= scale:
            return f"{count / scale:g} {unit}"
    return f"{count:,} bytes"


def _user_tasks() -> int:
    """Tasks (threads) this user runs now: what RLIMIT_NPROC counts."""
    uid, total = str(os.getuid()), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = dict(
                    line.split(":", 1) for line in Path(entry.path, "status").read_text().splitlines()
                )
                if fields.get("Uid", "").split()[:1] == [uid]:
                    total += int(fields.get("Threads", "1"))
    return total


def _bounded(which: int, wanted: int) -> int:
    """A limit no higher than the hard limit this process may grant."""
    _, hard = resource.getrlimit(which)
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
