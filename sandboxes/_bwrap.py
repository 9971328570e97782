"""The bubblewrap command line: what an isolated command sees of the host, checked once per process.

docs/sandboxes.md describes the result: what is mounted, what is absent, and why.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from machine.errors import BadInputError

from ._scratch import scratch_args

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
HOSTNAME = "sandbox"


@dataclass(frozen=True)
class Mount:
    """An extra directory of the host shown read-only inside the sandbox (e.g. a Julia installation)."""

    source: Path
    target: str | None = None
    """Where it appears inside; the same path as on the host by default."""


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


def bwrap_options(
    path: Path,
    covers: Sequence[str],
    mounts: Sequence[Mount] = (),
    workdir: str = WORKDIR,
    environment: Mapping[str, str] | None = None,
    shown: Sequence[str] = (),
    scratch_bytes: int | None = None,
) -> list[str]:
    """The bwrap options that show the run's directory ``path`` at ``workdir`` with ``covers`` (the
    arguments that hide its hidden folders) applied, ``mounts`` and the host paths bound by ``shown``
    (bwrap arguments) read-only, and ``environment`` added to the command's own (``ENVIRONMENT``, with
    ``HOME`` the directory); with ``scratch_bytes``, the directory is shown for a copy into a tmpfs of
    that size instead (``_scratch``). They name host
    paths, so a command is given them through a descriptor (``--args``), not on its command line,
    where ``/proc/1/cmdline`` would show them."""
    argv = [*system_args()]
    for mount in mounts:
        source = Path(mount.source)
        target = mount.target or str(source)
        if not source.is_absolute() or not source.exists():
            raise BadInputError(f"mount source {str(source)!r} is not an existing absolute path")
        normal = os.path.normpath(target)
        if not target.startswith("/") or normal != target.rstrip("/") or normal == "/":
            raise BadInputError(f"mount target {target!r} must be a plain absolute path other than /")
        if normal == workdir or normal.startswith(workdir + "/") or workdir.startswith(normal + "/"):
            raise BadInputError(
                f"mount target {target!r} overlaps {workdir}, where the sandbox's own directory is shown"
            )
        argv += ["--ro-bind", str(source), target]
    own = scratch_args(str(path), workdir, scratch_bytes) if scratch_bytes else ["--bind", str(path), workdir]
    argv += [*shown, *own, *covers]
    argv += ["--remount-ro", "/", "--chdir", workdir]
    for name, value in {**ENVIRONMENT, "HOME": workdir, **(environment or {})}.items():
        argv += ["--setenv", name, value]
    return argv
