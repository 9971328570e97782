"""A run's own working directory under ``.machine/sandboxes/<run-id>``, removed after the run.

Commands run in it isolated by bubblewrap where that works (``isolated`` is True), else with only a scrubbed
environment; docs/sandboxes.md says what each gives.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import anyio

from machine.errors import BadInputError

from ._admission import NotAdmitted
from ._bwrap import ENVIRONMENT, ETC_ALLOWED, PATH, WORKDIR, Mount, bubblewrap, bwrap_options, system_args
from ._bwrap import _working_bwrap as _working_bwrap  # tests clear its cache
from ._caps import CommandGroup, IsolationReport, Limits, report
from ._hidden_folder import HiddenFolder, cover_args
from ._library import LIBRARY_WORKDIR, library_args, library_environment
from ._process import wait_capped
from ._scratch import disk_note, scratch_argv
from ._spawn import Started, start

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT = 20_000
OPTIONS_KEPT = 16
"""bwrap option lists a sandbox keeps, one per set of mounts and place of its hidden folders."""


class SandboxEscape(BadInputError):
    """A path that would lead outside the run's directory."""


@dataclass(frozen=True)
class ExecResult:
    """What a command did: its exit code, its (capped) output, and whether it ran out of time."""

    exit_code: int | None
    """None when the command was killed at its timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    """Whether stdout or stderr was cut at ``max_output`` characters (the text ends with a note)."""
    seconds: float = 0.0
    reached: tuple[str, ...] = ()
    """The caps the command reached: ``processes``, ``memory``, ``disk`` (a scratch sandbox's), ``time``."""

    @property
    def ok(self) -> bool:
        """Exit code 0, within the time limit."""
        return self.exit_code == 0 and not self.timed_out


class LocalSandbox:
    """A run's own directory; ``exec`` runs commands in it, isolated by bubblewrap where it works."""

    default_limits: ClassVar[Limits] = Limits()
    """The limits of sandboxes made without ``limits`` (see ``with_limits``)."""

    def __init__(
        self,
        path: Path,
        *,
        isolate: bool = True,
        hide: Sequence[str] = (),
        limits: Limits | None = None,
        library: bool = False,
        scratch: bool = False,
    ) -> None:
        self.path = path.resolve()
        self._bwrap = bubblewrap() if isolate else None
        self.limits = limits or self.default_limits
        """The processes and memory each command tree may use."""
        self.library = library
        """Whether commands see this library and its interpreter (``library``), at their own paths."""
        self.workdir = LIBRARY_WORKDIR if library else WORKDIR
        """Where the directory appears to the commands run in it."""
        self.scratch = scratch and self._bwrap is not None
        """Whether commands work on an in-memory copy of the directory, capped at ``limits.disk_bytes``,
        whose changes are thrown away (``scratch``)."""
        self._hidden = [HiddenFolder(self.path, name) for name in hide]
        self.hidden = tuple(folder.path for folder in self._hidden)
        """Folders inside the directory the run may not see (a workspace's ``.machine`` store), where
        they were when the sandbox was made; they are followed by identity if moved."""
        self._options_kept: dict[tuple[object, ...], tuple[tuple[str, ...], bytes]] = {}

    @classmethod
    def with_limits(cls, limits: Limits) -> type[LocalSandbox]:
        """This class with other default limits: a factory for a workspace's sandboxes."""
        return type(cls.__name__, (cls,), {"default_limits": limits, "__module__": cls.__module__})

    @property
    def isolated(self) -> bool:
        """Whether commands run under bubblewrap (no network, no user data, an empty environment)."""
        return self._bwrap is not None

    @property
    def isolation(self) -> IsolationReport:
        """What commands here are isolated from and capped at, and by what; ``str()`` says it in words."""
        return report(self.limits, self.isolated)

    def __repr__(self) -> str:
        return f"LocalSandbox({str(self.path)!r}, isolated={self.isolated})"

    @classmethod
    def create(
        cls,
        root: Path,
        run_id: str,
        files: Mapping[str, str] | None = None,
        *,
        isolate: bool = True,
        limits: Limits | None = None,
        library: bool = False,
        scratch: bool = False,
    ) -> LocalSandbox:
        """Make ``root/run_id`` (private to this user) and seed it with the starting files, whose
        names are paths inside it (``src/app.py``); a name that leads outside is refused and nothing
        is left behind."""
        if not run_id or run_id in (".", "..") or "/" in run_id or "\x00" in run_id:
            raise BadInputError(f"{run_id!r} cannot name a sandbox folder: use a run id without '/'")
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = root / run_id
        path.mkdir(mode=0o700)
        sandbox = cls(path, isolate=isolate, limits=limits, library=library, scratch=scratch)
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

    @classmethod
    def for_library(cls, root: Path, run_id: str, files: Mapping[str, str] | None = None) -> LocalSandbox:
        """A fresh scratch ``root/run_id`` (``for_scratch``) whose commands can run this library's Python
        (``sys.executable -P -m machine.<module>``): the interpreter and the installed library are shown
        read-only at their own paths, the directory at ``LIBRARY_WORKDIR``."""
        return cls.create(root, run_id, files, library=True, scratch=True)

    @classmethod
    def for_scratch(cls, root: Path, run_id: str, files: Mapping[str, str] | None = None) -> LocalSandbox:
        """A fresh ``root/run_id`` whose commands work on an in-memory copy of it, capped at the limits'
        ``disk_bytes``, whose changes are thrown away: for code nobody has read whose only result is what
        it prints (see ``_scratch``)."""
        return cls.create(root, run_id, files, scratch=True)

    @classmethod
    def open(cls, folder: Path, *, hide: Sequence[str] = (), limits: Limits | None = None) -> LocalSandbox:
        """The person's own ``folder`` as a sandbox, with the relative paths in ``hide`` hidden."""
        return cls(folder, hide=hide, limits=limits)

    def remove(self) -> None:
        """Delete the directory and everything in it, even folders a command made read-only."""
        _remove_tree(self.path)

    def resolve(self, relative: str) -> Path:
        """The host path of ``relative`` inside the sandbox; absolute paths, ``..`` and symlinks that
        lead outside are refused with SandboxEscape. ``/work/...`` (the path commands see) is read
        as relative to the working directory."""
        if not isinstance(relative, str) or "\x00" in relative:
            raise SandboxEscape(f"{relative!r} is not a usable path")
        if relative.startswith(self.workdir + "/") or relative == self.workdir:
            relative = relative[len(self.workdir) :].lstrip("/") or "."
        if os.path.isabs(relative):
            raise SandboxEscape(
                f"{relative!r} is an absolute path outside {self.workdir}: "
                "give a path inside the working directory"
            )
        try:
            candidate = (self.path / relative).resolve()
        except (OSError, RuntimeError) as error:  # a symlink loop (RuntimeError before Python 3.13)
            raise SandboxEscape(f"{relative!r} cannot be resolved: {error}") from error
        if not candidate.is_relative_to(self.path):
            raise SandboxEscape(f"{relative!r} leads outside the working directory")
        if any(folder.holds(candidate) for folder in self._hidden):
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
        return [self._bwrap, *self._options(mounts)[0], "--", *command]

    def _options(self, mounts: Sequence[Mount]) -> tuple[tuple[str, ...], bytes]:
        """bubblewrap's options for ``mounts``, and the same as ``--args`` reads them: built once for
        each set of mounts and each place the hidden folders are in (a command may move them)."""
        covers = cover_args(self.path, self.workdir, self._hidden)
        scratch = self.limits.disk_bytes if self.scratch else None
        key = (self.path, self.workdir, self.library, scratch, tuple(covers), tuple(mounts))
        kept = self._options_kept.get(key)
        if kept is not None:
            return kept
        if not self.library:
            options = bwrap_options(self.path, covers, mounts, scratch_bytes=scratch)
        else:
            options = bwrap_options(
                self.path, covers, mounts, self.workdir, library_environment(), library_args(), scratch
            )
        if len(self._options_kept) >= OPTIONS_KEPT:
            self._options_kept.clear()
        kept = self._options_kept[key] = (tuple(options), b"".join(arg.encode() + b"\0" for arg in options))
        return kept

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output: int = DEFAULT_MAX_OUTPUT,
        mounts: Sequence[Mount] = (),
    ) -> ExecResult:
        """Run ``command`` (a shell line, or argv) in the sandbox under its limits, killing its whole
        process tree at ``timeout_s``; stdout and stderr are each capped at ``max_output`` characters."""
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise BadInputError("an empty command: give a shell line or a program and its arguments")
        started = time.monotonic()
        unrunnable = None if self.isolated else _unrunnable(argv[0], self.path)
        if unrunnable is not None:  # what exec would say, before anything is made for it
            return ExecResult(exit_code=127, stdout="", stderr=f"{argv[0]}: {unrunnable}")
        group = CommandGroup.make(self.limits)
        try:
            try:
                process = self._start(argv, mounts, group)
            except NotAdmitted as error:
                return ExecResult(None, "", f"[not run: it could not be put under its limits: {error}]")
            except OSError as error:  # the program itself (without bubblewrap), or bwrap, cannot be run
                code = 127 if isinstance(error, FileNotFoundError) else 126
                return ExecResult(code, "", f"{error.filename or argv[0]}: {error.strerror or error}")
            out, err, timed_out = await wait_capped(process, timeout_s, max_output, group.kill)
            reached = group.reached()
        finally:
            with anyio.CancelScope(shield=True):
                await group.remove()
        notes = list(reached.values())
        if self.scratch and disk_note(self.limits.disk_bytes) in err.text():
            reached["disk"] = disk_note(self.limits.disk_bytes)
        stderr = (
            "\n".join(part for part in [err.text().rstrip("\n"), *notes] if part) if notes else err.text()
        )
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
            reached=(*reached, *(("time",) if timed_out else ())),
        )

    def _inside(self, argv: list[str]) -> list[str]:
        return scratch_argv(argv, self.limits.disk_bytes) if self.scratch else argv

    def _start(self, argv: list[str], mounts: Sequence[Mount], group: CommandGroup) -> Started:
        """Start ``argv`` under the group's caps from its first instruction (``_spawn``): under
        bubblewrap, whose options (host paths) go through a descriptor and whose environment names no
        host path; else with ``HOME`` the folder."""
        admission = group.admission()
        try:
            if self._bwrap is None:
                env = {**ENVIRONMENT, "HOME": str(self.path)}  # nothing of the parent's
                if self.library:
                    env.update(library_environment())
                try:
                    return start(argv, admission, cwd=self.path, env=env)
                except OSError as error:  # a script without a #! line: run by sh, as under bubblewrap
                    if error.errno != errno.ENOEXEC:
                        raise
                    script = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=PATH) or argv[0]
                    return start(["/bin/sh", script, *argv[1:]], admission, cwd=self.path, env=env)
            content = self._options(mounts)[1]
            options = os.memfd_create("bwrap-options", os.MFD_CLOEXEC)
            try:
                os.write(options, content)
                os.lseek(options, 0, os.SEEK_SET)
                bwrap = [self._bwrap, "--args", str(options), "--", *self._inside(argv)]
                return start(bwrap, admission, cwd="/", env=ENVIRONMENT, pass_fds=(options,))
            finally:
                os.close(options)
        finally:
            admission.close()


def _unrunnable(program: str, cwd: Path) -> str | None:
    """Why ``program`` could not be started outside bubblewrap, as exec would say it; None if it can."""
    found = str(cwd / program) if "/" in program else shutil.which(program, path=PATH)
    if found is None or not os.path.exists(found):
        return "No such file or directory"
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        return "Permission denied"
    return None


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


__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT_S",
    "ENVIRONMENT",
    "ETC_ALLOWED",
    "PATH",
    "WORKDIR",
    "ExecResult",
    "IsolationReport",
    "Limits",
    "LocalSandbox",
    "Mount",
    "SandboxEscape",
    "bubblewrap",
    "system_args",
]
