"""run_julia: Julia in the run's isolated sandbox, with only the Julia installation mounted.

Juliaup keeps Julia under the home directory (``~/.julia/juliaup/julia-<version>/``), which the
sandbox hides, and the ``julia`` on PATH is usually juliaup's launcher, which needs juliaup's own
configuration to start. So the tool finds the installation itself (the folder with ``bin/julia`` and
``share/julia``) and mounts just that folder, read-only, at ``/julia`` in the sandbox: never the rest of
``~/.julia`` (packages, registries, credentials). The depot Julia writes to is a fresh one in the
sandbox's ``/tmp``; the bundled one, with the standard library, stays readable after it. There is no
network in the sandbox, so packages cannot be added: programs use Base and the standard library.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from machine import BadInputError, ToolContext, ToolFailure, tool

MOUNT_POINT = "/julia"
DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
INSTALL_HINT = (
    "Julia is not installed on this machine, so run_julia cannot run anything. To install it, use "
    "juliaup: `curl -fsSL https://install.julialang.org | sh` (then open a new shell, or add "
    "~/.juliaup/bin to PATH), or set JULIA_BINDIR to the bin folder of an existing Julia installation."
)


@dataclass(frozen=True)
class Installation:
    """A Julia installation: ``root/bin/julia`` with its libraries beside it."""

    root: Path

    @property
    def binary(self) -> Path:
        return self.root / "bin" / "julia"


def installation_of(binary: Path) -> Installation | None:
    """The installation a ``julia`` binary belongs to; None for juliaup's launcher or anything else
    that is not a binary inside ``<root>/bin`` with ``<root>/share/julia`` or ``<root>/lib/julia``."""
    try:
        real = binary.resolve(strict=True)
    except OSError:
        return None
    root = real.parent.parent
    if real.parent.name != "bin" or not real.is_file():
        return None
    if (root / "share" / "julia").is_dir() or (root / "lib" / "julia").is_dir():
        return Installation(root)
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name)[:3])


def juliaup_installation(juliaup_dir: Path) -> Installation | None:
    """The installation of juliaup's default channel (from its ``juliaup.json``), else the newest
    ``julia-<version>`` folder juliaup installed."""
    try:
        config = json.loads((juliaup_dir / "juliaup.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        config = {}
    if isinstance(config, dict):
        channels = config.get("InstalledChannels") or {}
        versions = config.get("InstalledVersions") or {}
        channel = channels.get(config.get("Default")) if isinstance(channels, dict) else None
        version = channel.get("Version") if isinstance(channel, dict) else None
        entry = versions.get(version) if isinstance(versions, dict) and isinstance(version, str) else None
        path = entry.get("Path") if isinstance(entry, dict) else None
        if isinstance(path, str):
            found = installation_of(juliaup_dir / path / "bin" / "julia")
            if found is not None:
                return found
    folders = sorted(juliaup_dir.glob("julia-*"), key=lambda p: _version_key(p.name), reverse=True)
    for folder in folders:
        found = installation_of(folder / "bin" / "julia")
        if found is not None:
            return found
    return None


def find_julia(environ: Mapping[str, str] | None = None, home: Path | None = None) -> Installation | None:
    """Where Julia is installed: ``JULIA_BINDIR``, then ``julia`` on PATH (when it is a real binary,
    not juliaup's launcher), then juliaup's folder (``$JULIAUP_DEPOT_PATH``, else the first entry of
    ``$JULIA_DEPOT_PATH``, else ``~/.julia``). None when there is none."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home()) if home is None else home
    bindir = environ.get("JULIA_BINDIR")
    if bindir:
        found = installation_of(Path(bindir) / "julia")
        if found is not None:
            return found
    on_path = shutil.which("julia", path=environ.get("PATH", ""))
    if on_path:
        found = installation_of(Path(on_path))
        if found is not None:
            return found
    depots = [environ.get("JULIAUP_DEPOT_PATH", "")]
    depots += [d for d in environ.get("JULIA_DEPOT_PATH", "").split(os.pathsep) if d]
    depots.append(str(home / ".julia"))
    for depot in depots:
        if depot:
            found = juliaup_installation(Path(depot) / "juliaup")
            if found is not None:
                return found
    return None


def julia_command(path: str | None, code: str | None) -> list[str]:
    """The argv that runs a program file (``path``) or a snippet (``code``) with the mounted Julia."""
    argv = [
        "env",
        # a writable depot first; the trailing ':' keeps the bundled one (the standard library) after it
        "JULIA_DEPOT_PATH=/tmp/julia-depot:",
        "JULIA_PKG_OFFLINE=true",
        f"{MOUNT_POINT}/bin/julia",
        "--startup-file=no",
        "--history-file=no",
        "--color=no",
    ]
    return [*argv, "-e", code] if code is not None else [*argv, "--", path or ""]


def report(exit_code: int | None, stdout: str, stderr: str, timed_out: bool, timeout_s: float) -> str:
    """What the model reads back, in the same form as the run tool's results: the exit code first,
    then each stream."""
    if timed_out or exit_code is None:
        head = f"timed out after {timeout_s:g} s: Julia and everything it started were killed"
    else:
        head = f"exit code: {exit_code}"
    return "\n".join(
        [
            head,
            "--- stdout ---",
            stdout.rstrip("\n") or "(empty)",
            "--- stderr ---",
            stderr.rstrip("\n") or "(empty)",
        ]
    )


@tool
async def run_julia(
    ctx: ToolContext, path: str = "", code: str = "", timeout_s: float = DEFAULT_TIMEOUT_S
) -> str:
    """Run a Julia program in the sandbox and return its exit code, stdout and stderr. Give `path` to
    run a .jl file you wrote (e.g. "main.jl"), or `code` to run a snippet directly; not both. Only Base
    and the standard library are available (no network, so no packages). `timeout_s` is at most 600."""
    from machine.sandboxes import Mount

    if ctx.sandbox is None:
        raise ToolFailure("run_julia needs a sandbox, and this run has none")
    if path and code:
        raise ToolFailure("give run_julia `path` or `code`, not both")
    if not path and not code:
        raise ToolFailure("give run_julia `path` (a .jl file in the working directory) or `code` to run")
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise ToolFailure(f"timeout_s must be between 0 and {MAX_TIMEOUT_S:g} seconds, got {timeout_s:g}")
    installation = find_julia()
    if installation is None:
        raise ToolFailure(INSTALL_HINT)
    if not ctx.sandbox.isolated:
        raise ToolFailure(
            "run_julia runs only in an isolated sandbox, and bubblewrap is not available here: install "
            "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) to run model-written programs"
        )
    if path:
        try:
            target = ctx.sandbox.resolve(path)  # refuses paths that lead outside the working directory
        except BadInputError as error:
            raise ToolFailure(str(error)) from None
        if not target.is_file():
            raise ToolFailure(f"{path} does not exist in the working directory; write it first")
        path = ctx.sandbox.display(target)
    result = await ctx.sandbox.exec(
        julia_command(path or None, code or None),
        timeout_s=timeout_s,
        mounts=[Mount(installation.root, MOUNT_POINT)],
    )
    return report(result.exit_code, result.stdout, result.stderr, result.timed_out, timeout_s)
