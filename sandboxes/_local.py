"""A run's own working directory under ``.machine/sandboxes/<run-id>``, removed after the run.

Where bubblewrap works, commands run isolated: no network at all (loopback included), a read-only
system, ``/home``, ``/root``, ``/tmp`` and other user data hidden except the run's own directory
(writable), an empty environment, and a wall-clock timeout after which the whole process tree is
killed, daemonized grandchildren included (they live in the command's own PID namespace, which ends
with it). Without bubblewrap the environment is still scrubbed, but commands can reach the files and
the network of the machine: ``isolated`` says which, and tools that run model-written code refuse
when it is False.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio
import anyio.abc

from machine._errors import BadInputError

WORKDIR = "/work"
"""Where the run's directory appears inside the sandbox."""
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
"""Mounted read-only inside the sandbox (when they exist); everything else is absent."""
PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT = 20_000


class SandboxEscape(BadInputError):
    """A path that would lead outside the run's directory."""


@dataclass(frozen=True)
class Mount:
    """An extra directory of the host shown read-only inside the sandbox (e.g. a Julia installation)."""

    source: Path
    target: str | None = None


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    """None when the command was killed at its timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@cache
def bubblewrap() -> str | None:
    """The bwrap binary, if it is installed and can make namespaces here (checked once)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    try:
        probe = subprocess.run(
            [found, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


class LocalSandbox:
    def __init__(self, path: Path, *, isolate: bool = True) -> None:
        self.path = path.resolve()
        self._bwrap = bubblewrap() if isolate else None

    @property
    def isolated(self) -> bool:
        """Whether commands run under bubblewrap (no network, no user data, an empty environment)."""
        return self._bwrap is not None

    @classmethod
    def create(
        cls, root: Path, run_id: str, files: Mapping[str, str] | None = None, *, isolate: bool = True
    ) -> LocalSandbox:
        path = root / run_id
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.mkdir(mode=0o700)
        sandbox = cls(path, isolate=isolate)
        for name, content in (files or {}).items():
            target = sandbox.resolve(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return sandbox

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def resolve(self, relative: str) -> Path:
        """The host path of ``relative`` inside the sandbox; absolute paths, ``..`` and symlinks that
        lead outside are refused with SandboxEscape."""
        if not isinstance(relative, str) or "\x00" in relative:
            raise SandboxEscape(f"{relative!r} is not a usable path")
        if relative.startswith(WORKDIR + "/") or relative == WORKDIR:  # the path the sandbox shows
            relative = relative[len(WORKDIR) :].lstrip("/") or "."
        if os.path.isabs(relative):
            raise SandboxEscape(f"{relative!r} is an absolute path: give a path inside the working directory")
        candidate = (self.path / relative).resolve()
        if not candidate.is_relative_to(self.path):
            raise SandboxEscape(f"{relative!r} leads outside the working directory")
        return candidate

    def display(self, path: Path) -> str:
        """How a host path inside the sandbox is shown to the model: relative to its directory."""
        relative = path.resolve().relative_to(self.path).as_posix()
        return relative or "."

    def command_line(self, command: Sequence[str], mounts: Sequence[Mount] = ()) -> list[str]:
        """The argv that runs ``command`` in this sandbox (bubblewrap when isolated)."""
        if self._bwrap is None:
            return list(command)
        argv = [self._bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
        for directory in SYSTEM_DIRS:
            if Path(directory).exists():
                argv += ["--ro-bind", directory, directory]
        for link, target in (
            ("/bin", "usr/bin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/sbin", "usr/sbin"),
        ):
            if Path(link).is_symlink():
                argv += ["--symlink", target, link]
            elif Path(link).is_dir():
                argv += ["--ro-bind", link, link]
        for mount in mounts:
            argv += ["--ro-bind", str(mount.source), mount.target or str(mount.source)]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        argv += ["--bind", str(self.path), WORKDIR, "--chdir", WORKDIR]
        argv += ["--setenv", "PATH", PATH, "--setenv", "HOME", WORKDIR, "--setenv", "LANG", "C.UTF-8"]
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
        ``timeout_s``; stdout and stderr are each capped at ``max_output`` characters."""
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        env = {"PATH": PATH, "HOME": str(self.path), "LANG": "C.UTF-8"}  # nothing of the parent's
        started = time.monotonic()
        process = await anyio.open_process(
            self.command_line(argv, mounts),
            cwd=self.path,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out, err = _Capture(max_output), _Capture(max_output)
        timed_out = False
        try:
            with anyio.move_on_after(timeout_s) as scope:
                async with anyio.create_task_group() as group:
                    assert process.stdout is not None and process.stderr is not None
                    group.start_soon(out.drain, process.stdout)
                    group.start_soon(err.drain, process.stderr)
                    await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            _kill_tree(process)
            with anyio.CancelScope(shield=True):
                await process.wait()
        return ExecResult(
            exit_code=None if timed_out else process.returncode,
            stdout=out.text(),
            stderr=err.text() + (f"\n[killed after {timeout_s:g} s: the time limit]" if timed_out else ""),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            seconds=time.monotonic() - started,
        )


class _Capture:
    """Keeps the first ``limit`` characters of a stream and drains the rest, noting that it did."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    async def drain(self, stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            if self.size < self.limit * 4:  # bytes: up to 4 per character
                self.chunks.append(chunk)
                self.size += len(chunk)

    def text(self) -> str:
        text = b"".join(self.chunks).decode("utf-8", errors="replace")
        if len(text) > self.limit or self.size >= self.limit * 4:
            self.truncated = True
            return text[: self.limit] + f"\n[output cut at {self.limit} characters]"
        return text


def _kill_tree(process: anyio.abc.Process) -> None:
    """SIGKILL the command's process group. Under bubblewrap the command is also the parent of its
    own PID namespace, so every process it started, even one that left the group, dies with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
