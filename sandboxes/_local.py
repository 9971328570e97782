"""A run's own working directory under ``.machine/sandboxes/<run-id>``, removed after the run.

Where bubblewrap works, commands run isolated (``isolated`` is True):

- **no network**: a fresh network namespace holds only its own loopback, so neither the internet nor a
  server on the host's 127.0.0.1 can be reached;
- **a read-only system without secrets**: ``/usr`` (and the ``/bin``, ``/lib``… links into it) is
  mounted read-only, minus ``/usr/local/etc``; of ``/etc`` only what programs need to start
  (the loader's cache, alternatives, CA certificates, time zone, passwd/group, Python's config, …, see
  ``ETC_ALLOWED``), never ``shadow``, ``ssh``, ``machine-id``, ``pip.conf``/``npmrc``, ``gitconfig`` or
  ``resolv.conf``. ``/opt`` is NOT mounted: it holds add-on software and, as often, vendors' agents,
  data and credentials; a tool that needs something from it (a Julia installation) mounts that one
  directory read-only with ``Mount``;
- **no user data**: ``/home``, ``/root``, ``/var``, ``/run``, ``/mnt``, ``/srv``, ``/sys`` are absent,
  ``/tmp`` is a private tmpfs, and the root itself is read-only; the run's directory, mounted at
  ``/work`` (the working directory), is the only writable host path;
- **an empty environment**: only ``PATH``, ``HOME=/work`` and ``LANG``; no capabilities; its own
  hostname, PID, IPC and UTS namespaces;
- **a wall-clock timeout that kills the whole process tree**: the command runs in its own PID
  namespace whose init is bubblewrap; when the command ends, or when the timeout kills bubblewrap
  (``--die-with-parent`` then takes the init), the kernel kills every process left in the namespace,
  daemonized grandchildren (``setsid``, ``nohup``, double forks) included.

Without bubblewrap (``isolated`` is False) the environment is still scrubbed and the command still
starts in the run's directory, in its own process group that is killed at the timeout; but it can
read the machine's files and reach the network, and a grandchild that calls ``setsid`` leaves that
group and may survive the timeout. Tools that run model-written code (``run``) therefore refuse when
``isolated`` is False.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio
import anyio.abc

from machine._errors import BadInputError

WORKDIR = "/work"
"""Where the run's directory appears inside the sandbox."""
SYSTEM_DIRS = ("/usr",)
"""Host directories mounted whole, read-only, inside the sandbox (when they exist)."""
SYSTEM_LINKS = ("/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin")
"""Top-level links into ``/usr`` (merged-/usr systems) reproduced as links, or bound read-only where
they are real directories."""
HIDDEN_DIRS = ("/usr/local/etc",)
"""Directories under ``SYSTEM_DIRS`` replaced by an empty tmpfs: local software's configuration,
where tokens live (``npmrc``)."""
ETC_ALLOWED = (
    # the dynamic loader, and the binaries Debian's alternatives point to (awk, editor, java, ...)
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    # TLS: public CA certificates and OpenSSL's settings (Debian, then Red Hat), never the private keys
    "ssl/certs",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "pki/ca-trust/extracted",
    "crypto-policies",
    # time, users, and name lookup (libc reads them; "localhost" must resolve for local servers)
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "services",
    "protocols",
    # interpreters and file types
    "python3",
    "python3.*",
    "java-*",
    "mime.types",
    "os-release",
    "mtab",
)
"""The entries of ``/etc`` shown inside the sandbox (shell globs); the rest of ``/etc`` is absent.
Symbolic links are reproduced as links (``localtime``, ``mtab``). Each bound entry costs bubblewrap
about 0.1 ms a command, so the list holds what programs need to start and work offline, no more:
``sh``, coreutils, ``grep``, ``awk``, ``git``, ``python3`` (``ssl``, ``unittest``), ``perl``, ``java``."""
PATH = "/usr/local/bin:/usr/bin:/bin"
ENVIRONMENT = {"PATH": PATH, "HOME": WORKDIR, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
"""A command's whole environment. No bytecode caches: a ``.pyc`` from an earlier command can hide an
edit made within the same second that keeps the file's size."""
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT = 20_000
HOSTNAME = "sandbox"
DRAIN_GRACE_S = 1.0
"""After the command ends, how long to wait for the last of its output (held open only by a process
that escaped the kill, which only happens without bubblewrap)."""


class SandboxEscape(BadInputError):
    """A path that would lead outside the run's directory."""


@dataclass(frozen=True)
class Mount:
    """An extra directory of the host shown read-only inside the sandbox (e.g. a Julia installation)."""

    source: Path
    target: str | None = None
    """Where it appears inside; the same path as on the host by default."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    """None when the command was killed at its timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    """Whether stdout or stderr was cut at ``max_output`` characters (the text ends with a note)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def _bind_or_link(path: str) -> list[str]:
    """bwrap arguments that show the host's ``path`` read-only: a link stays a link (its target is
    shown only if it is itself mounted), a file or directory is bound."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.exists(path):
        return ["--ro-bind", path, path]
    return []


NO_NESTED_NAMESPACES = ("--unshare-user", "--disable-userns")
"""Forbids the command to make user namespaces of its own, a common way into kernel bugs (bubblewrap
0.8 and later; older ones run without it)."""


def _system_args(hardening: Sequence[str]) -> tuple[str, ...]:
    argv = [
        "--unshare-all",  # user (where possible), IPC, PID, network (loopback only), UTS, cgroup
        *hardening,
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
        "--hostname",
        HOSTNAME,
    ]
    for directory in SYSTEM_DIRS:
        if os.path.isdir(directory):
            argv += ["--ro-bind", directory, directory]
    for hidden in HIDDEN_DIRS:
        if os.path.isdir(hidden) and not os.path.islink(hidden):
            argv += ["--tmpfs", hidden, "--remount-ro", hidden]
    for link in SYSTEM_LINKS:
        argv += _bind_or_link(link)
    seen: set[str] = set()
    for pattern in ETC_ALLOWED:
        for path in sorted(glob.glob(os.path.join("/etc", pattern))):
            if path not in seen:
                seen.add(path)
                argv += _bind_or_link(path)
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    return tuple(argv)


@cache
def _working_bwrap() -> tuple[str, tuple[str, ...]] | None:
    """The bwrap binary and the system arguments that work with it here, checked once per process by
    running ``true`` the way every command runs: with the hardening first, then without it."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    for hardening in (NO_NESTED_NAMESPACES, ()):
        args = _system_args(hardening)
        try:
            probe = subprocess.run(
                [found, *args, "--remount-ro", "/", "--", "true"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if probe.returncode == 0:
            return found, args
    return None


def bubblewrap() -> str | None:
    """The bwrap binary, if it is installed and can build the sandbox here (checked once)."""
    working = _working_bwrap()
    return working[0] if working else None


def system_args() -> tuple[str, ...]:
    """The bwrap arguments every isolated command shares: namespaces, the read-only system, a
    private /tmp (they depend only on which system files exist, so they are computed once)."""
    working = _working_bwrap()
    return working[1] if working else _system_args(NO_NESTED_NAMESPACES)


class LocalSandbox:
    """A run's own directory; ``exec`` runs commands in it, isolated by bubblewrap where it works."""

    def __init__(self, path: Path, *, isolate: bool = True, hide: Sequence[str] = ()) -> None:
        self.path = path.resolve()
        self._bwrap = bubblewrap() if isolate else None
        self.hidden = tuple(self.path / name for name in hide)
        """Folders inside the directory the run may not see (a workspace's ``.machine`` store)."""

    @property
    def isolated(self) -> bool:
        """Whether commands run under bubblewrap (no network, no user data, an empty environment)."""
        return self._bwrap is not None

    def __repr__(self) -> str:
        return f"LocalSandbox({str(self.path)!r}, isolated={self.isolated})"

    @classmethod
    def create(
        cls, root: Path, run_id: str, files: Mapping[str, str] | None = None, *, isolate: bool = True
    ) -> LocalSandbox:
        """Make ``root/run_id`` (private to this user) and seed it with the starting files, whose
        names are paths inside it (``src/app.py``); a name that leads outside is refused and nothing
        is left behind."""
        if not run_id or run_id in (".", "..") or "/" in run_id or "\x00" in run_id:
            raise BadInputError(f"{run_id!r} cannot name a sandbox folder: use a run id without '/'")
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = root / run_id
        path.mkdir(mode=0o700)
        sandbox = cls(path, isolate=isolate)
        try:
            for name, content in (files or {}).items():
                target = sandbox.resolve(name)
                if target == sandbox.path:
                    raise SandboxEscape(f"starting file {name!r} names the working directory, not a file")
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(content, encoding="utf-8")
                except OSError as error:
                    raise BadInputError(
                        f"starting file {name!r} could not be written: {error.strerror or error}"
                    ) from error
        except BaseException:
            sandbox.remove()
            raise
        return sandbox

    def remove(self) -> None:
        """Delete the directory and everything in it, even folders a command made read-only."""
        _remove_tree(self.path)

    def resolve(self, relative: str) -> Path:
        """The host path of ``relative`` inside the sandbox; absolute paths, ``..`` and symlinks that
        lead outside are refused with SandboxEscape. ``/work/...`` (the path commands see) is read
        as relative to the working directory."""
        if not isinstance(relative, str) or "\x00" in relative:
            raise SandboxEscape(f"{relative!r} is not a usable path")
        if relative.startswith(WORKDIR + "/") or relative == WORKDIR:
            relative = relative[len(WORKDIR) :].lstrip("/") or "."
        if os.path.isabs(relative):
            raise SandboxEscape(
                f"{relative!r} is an absolute path outside {WORKDIR}: "
                "give a path inside the working directory"
            )
        try:
            candidate = (self.path / relative).resolve()
        except (OSError, RuntimeError) as error:  # a symlink loop (RuntimeError before Python 3.13)
            raise SandboxEscape(f"{relative!r} cannot be resolved: {error}") from error
        if not candidate.is_relative_to(self.path):
            raise SandboxEscape(f"{relative!r} leads outside the working directory")
        if any(candidate.is_relative_to(hidden) for hidden in self.hidden):
            raise SandboxEscape(f"{relative!r} is private to machine and hidden from runs")
        return candidate

    def display(self, path: Path) -> str:
        """How a host path inside the sandbox is shown to the model: relative to its directory."""
        relative = path.resolve().relative_to(self.path).as_posix()
        return relative or "."

    def command_line(self, command: Sequence[str], mounts: Sequence[Mount] = ()) -> list[str]:
        """The argv that runs ``command`` in this sandbox (bubblewrap when isolated)."""
        if self._bwrap is None:
            return list(command)
        argv = [self._bwrap, *system_args()]
        for mount in mounts:
            source = Path(mount.source)
            target = mount.target or str(source)
            if not source.is_absolute() or not source.exists():
                raise BadInputError(f"mount source {str(source)!r} is not an existing absolute path")
            normal = os.path.normpath(target)
            if not target.startswith("/") or normal != target.rstrip("/") or normal == "/":
                raise BadInputError(f"mount target {target!r} must be a plain absolute path other than /")
            if normal == WORKDIR or normal.startswith(WORKDIR + "/"):
                raise BadInputError(f"mount target {target!r} is inside {WORKDIR}, the run's own directory")
            argv += ["--ro-bind", str(source), target]
        argv += ["--bind", str(self.path), WORKDIR]
        for hidden in self.hidden:  # an empty, read-only folder over it
            if hidden.is_dir():
                inside = f"{WORKDIR}/{hidden.relative_to(self.path).as_posix()}"
                argv += ["--tmpfs", inside, "--remount-ro", inside]
        argv += ["--remount-ro", "/", "--chdir", WORKDIR]
        for name, value in ENVIRONMENT.items():
            argv += ["--setenv", name, value]
        return [*argv, "--", *command]

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output: int = DEFAULT_MAX_OUTPUT,
        mounts: Sequence[Mount] = (),
    ) -> ExecResult:
        """Run ``command`` (a shell line, or argv) in the sandbox, killing its whole process tree at
        ``timeout_s``; stdout and stderr are each capped at ``max_output`` characters, with a note."""
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise BadInputError("an empty command: give a shell line or a program and its arguments")
        env = {**ENVIRONMENT, "HOME": str(self.path)}  # nothing of the parent's
        started = time.monotonic()
        try:
            process = await anyio.open_process(
                self.command_line(argv, mounts),
                cwd=self.path,
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as error:  # not isolated, and the program does not exist or cannot run
            return ExecResult(
                exit_code=127,
                stdout="",
                stderr=f"{argv[0]}: {error.strerror or error}",
                seconds=time.monotonic() - started,
            )
        out, err = _Capture(max_output), _Capture(max_output)
        try:
            assert process.stdout is not None and process.stderr is not None
            async with anyio.create_task_group() as readers:
                readers.start_soon(out.drain, process.stdout)
                readers.start_soon(err.drain, process.stderr)
                with anyio.move_on_after(timeout_s) as limit:
                    await process.wait()
                timed_out = limit.cancelled_caught
                # Whatever the command left behind goes with it (under bubblewrap the namespace is
                # already going); then read what they wrote, without waiting on one that escaped.
                _kill_tree(process)
                with anyio.move_on_after(DRAIN_GRACE_S):
                    await out.done.wait()
                    await err.done.wait()
                readers.cancel_scope.cancel()
        finally:
            _kill_tree(process)
            with anyio.CancelScope(shield=True):
                await process.wait()
                await process.aclose()
        stderr = err.text()
        if timed_out:
            stderr += f"\n[killed after {timeout_s:g} s, the time limit" + (
                ", with every process it started]" if self.isolated else "]"
            )
        return ExecResult(
            exit_code=None if timed_out else process.returncode,
            stdout=out.text(),
            stderr=stderr,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            seconds=time.monotonic() - started,
        )


class _Capture:
    """Keeps the first ``limit`` characters of a stream and drains the rest, counting it, so that a
    chatty command neither blocks on a full pipe nor fills our memory."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.done = anyio.Event()

    async def drain(self, stream: anyio.abc.ByteReceiveStream) -> None:
        try:
            async for chunk in stream:
                self.total += len(chunk)
                room = self.limit * 4 - self.kept  # bytes: up to 4 per character
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.kept += min(room, len(chunk))
        finally:
            self.done.set()

    @property
    def truncated(self) -> bool:
        return self.total > self.kept or len(self._decoded()) > self.limit

    def _decoded(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def text(self) -> str:
        text = self._decoded()
        if self.total == self.kept and len(text) <= self.limit:
            return text
        return text[: self.limit] + f"\n[output cut at {self.limit:,} characters of {self.total:,} bytes]"


def _remove_tree(path: Path) -> None:
    """``shutil.rmtree``, opening up what a command locked (``chmod 000 dir``) and trying again."""

    def unlock(_function: Callable[..., object], failed: str, *_: object) -> None:
        for locked in (os.path.dirname(failed), failed):
            if not os.path.islink(locked):
                with contextlib.suppress(OSError):
                    os.chmod(locked, 0o700)

    for _ in range(8):  # each pass unlocks at least one more level
        if not os.path.lexists(path):
            return
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=unlock)
        else:
            shutil.rmtree(path, onerror=unlock)


def _kill_tree(process: anyio.abc.Process) -> None:
    """SIGKILL the command's process group. Under bubblewrap that group holds bubblewrap itself, and
    its death takes the init of the command's PID namespace and with it every process there, even
    one that left the group; without bubblewrap a process that called ``setsid`` is out of reach."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
