"""Running the library's own code on a copy of a workspace's machines inside a sandbox, where what a
model wrote may be imported: vetting an author's child or draft, describing an untrusted machine, grading
runs with its checks.

The machines are copied into a fresh sandbox of the workspace's own kind (``Sandboxes.for_library``),
isolated as a run's commands are (no network, no home, none of the person's files, a read-only system with
the interpreter and the library shown at their own paths, a private /tmp, an empty environment), capped in
processes and memory as they are, and killed with everything it started at the time limit. The process
(``python -P -m MODULE REQUEST.json``, see ``_vet_main``) speaks on a private copy of its stdout, one JSON
object a line: progress, then exactly one result, which is read as the given model and trusted no further
than its fields' own bounds. Where the sandbox is not isolated, nothing is run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field, ValidationError

from machine.errors import HarnessError
from machine.runs import Model, Sandboxes

MEMORY_BYTES = 4 * 1024**3
"""The address space the process may use (the sandbox caps its whole process tree besides)."""
CHECK_SECONDS = 10.0
"""The longest one check may take to grade one run."""
MAX_REPLY_CHARS = 4_000_000
"""The most the process may send back; what it sends past it is not read, and the work fails."""
STDERR_TAIL = 2000
NOT_ISOLATED = (
    "the sandbox is not isolated here (bubblewrap is missing or cannot make namespaces), so nothing the "
    "model wrote was run: install bubblewrap (`apt-get install bubblewrap`)"
)
_KILLED = re.compile(r"^\[a process was killed: the memory cap of (?P<cap>[^\]]+)\]$", re.MULTILINE)


class Reported(Model):
    """What every sandboxed process reports besides its own findings: the problems that stopped it or that
    it found, and whether it ran isolated (False: nothing was run, the sandbox is not isolated here)."""

    ok: bool = False
    problems: list[str] = Field(default_factory=list)
    isolated: bool | None = None


R = TypeVar("R", bound=Reported)


@dataclass(frozen=True)
class Limits:
    """What one sandboxed process may take: seconds in all, seconds a check, bytes of address space."""

    timeout_s: float = 60.0
    check_timeout_s: float = CHECK_SECONDS
    memory_bytes: int = MEMORY_BYTES


@dataclass(frozen=True)
class Process:
    """Which library module to run, what its errors call the work (``vetting the child``), and the model
    its result is read as."""

    module: str
    label: str
    result: type[Reported]


async def run_sandboxed(
    machines: Path,
    request: Mapping[str, Any],
    process: Process,
    *,
    sandboxes: Sandboxes | None,
    limits: Limits = Limits(),
    write: Callable[[Path], None] | None = None,
) -> Reported:
    """Copy ``machines`` into a fresh library sandbox (then ``write`` into the copy), and run ``process``
    there on ``request``; its result, or one whose problem says how it ended without one."""
    if sandboxes is None:
        raise HarnessError(
            "this workspace was made without sandboxes, so code a model wrote cannot be run: open it "
            "with machine.open_workspace, which makes them"
        )
    with tempfile.TemporaryDirectory(prefix="machine-vet-", ignore_cleanup_errors=True) as temporary:
        box = sandboxes.for_library(Path(temporary), "vetting", {})
        try:
            if not box.isolated:
                return process.result(isolated=False, problems=[NOT_ISOLATED])
            copy_code(machines, box.path / "machines")
            if write is not None:
                write(box.path / "machines")
            whole = {
                **request,
                "machines": f"{box.workdir}/machines",
                "check_s": limits.check_timeout_s,
                "deadline": time.time() + max(limits.timeout_s - 0.5, limits.timeout_s * 0.8),
                "memory_bytes": limits.memory_bytes,
            }
            (box.path / "request.json").write_text(json.dumps(whole), encoding="utf-8")
            argv = [sys.executable, "-P", "-m", process.module, f"{box.workdir}/request.json"]
            done = await box.exec(argv, timeout_s=limits.timeout_s, max_output=MAX_REPLY_CHARS)
        finally:
            box.remove()
    reported = _reported(_outcome(done), limits, box.workdir, process)
    reported.ok = not reported.problems
    return reported


COPIED = (".py", ".md")
"""The files of a machines folder its machines are loaded from (with ``model.json``): never its cases,
held-out cases or hidden tests, which the code a model wrote must not read and send back."""


def copy_code(machines: Path, into: Path) -> None:
    """Copy what loading ``machines`` needs into ``into``: its Python, its instructions and its model.json,
    each a regular file (a link is left out, so nothing it points at outside is copied), no hidden folder."""
    for folder, names, files in os.walk(machines):
        names[:] = sorted(n for n in names if n != "__pycache__" and not n.startswith("."))
        here = Path(folder)
        target = into / here.relative_to(machines)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            source = here / name
            wanted = name.endswith(COPIED) or name == "model.json"
            if wanted and not source.is_symlink() and source.is_file():
                shutil.copyfile(source, target / name)


@dataclass
class Outcome:
    """What the process left: its results (one, unless its channel was written to by another hand), its
    last progress, how it ended, and its stderr."""

    results: list[dict[str, Any]] = field(default_factory=list)
    progress: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    timed_out: bool = False
    overflowed: bool = False
    stderr: str = ""


def _outcome(done: Any) -> Outcome:
    """The sandbox's result of the process read as its JSON lines: progress, then a result."""
    outcome = Outcome(
        returncode=getattr(done, "exit_code", None),
        timed_out=bool(getattr(done, "timed_out", False)),
        overflowed=bool(getattr(done, "truncated", False)),
        stderr=str(getattr(done, "stderr", "")),
    )
    for line in str(getattr(done, "stdout", "")).splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and isinstance(message.get("result"), dict):
            outcome.results.append(message["result"])
        elif isinstance(message, dict) and "stage" in message:
            outcome.progress = message
    return outcome


def _doing(progress: Mapping[str, Any]) -> str:
    if progress.get("stage") == "grading":
        return (
            f" while the check of criterion {progress.get('criterion')!r} graded run "
            f"{progress.get('run')} (case {progress.get('case')!r})"
        )
    if progress.get("stage") == "loading":
        return f" while loading {progress.get('machine')!r}"
    return " while starting"


def _reported(outcome: Outcome, limits: Limits, inside: str, process: Process) -> Reported:
    """The process's own result, or a problem that says how it ended without one."""
    if len(outcome.results) == 1 and not outcome.overflowed and not outcome.timed_out:
        try:
            return process.result.model_validate({**outcome.results[0], "isolated": True})
        except ValidationError as error:
            return process.result(
                isolated=True,
                problems=[f"the process {process.label} sent back a result that does not read: {error}"],
            )
    doing = _doing(outcome.progress)
    killed = _KILLED.search(outcome.stderr)
    if len(outcome.results) > 1:
        what = (
            f"sent back {len(outcome.results)} results, where it sends one: the model's code wrote on "
            "the channel the process reports on"
        )
    elif outcome.overflowed:
        what = f"sent back more than {MAX_REPLY_CHARS:,} characters{doing}"
    elif outcome.timed_out:
        what = f"did not finish within {limits.timeout_s:g} s{doing}, and was stopped"
    elif killed is not None:
        what = (
            f"was killed{doing}: it reached the memory cap of {killed['cap']} (a check or import that "
            "needs more is refused)"
        )
    elif outcome.returncode is not None and outcome.returncode > 128:
        what = f"was killed by signal {outcome.returncode - 128}{doing}"
    else:
        what = f"exited with code {outcome.returncode}{doing} before it reported"
    tail = outcome.stderr.replace(inside + "/machines/", "machines/").replace(inside + "/", "")
    tail = _KILLED.sub("", tail).strip()[-STDERR_TAIL:]
    said = f"; its last output: {tail}" if tail else ""
    return process.result(isolated=True, problems=[f"the process {process.label} {what}{said}"])
