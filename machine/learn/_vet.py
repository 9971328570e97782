"""Vetting a child machine an author model wrote, without trusting it.

The workspace's machines are copied into a temporary folder, the author's files are written there, and
a separate process (``machine.learn._vet_main``) loads the child and runs its checks on sample runs. That
process is bounded in wall-clock time (its whole process group is killed at the limit), in memory, and in
what it may send back; it sees the caller's environment without its keys and tokens. The author's code is
never imported in the calling process.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from machine.errors import BadInputError, NotFoundError
from machine.runs import NAME_SEGMENT, Run

from ._child_files import REQUIRED_FILES, path_problem, write_child
from ._vet_draft import DRAFT_FILE
from ._vetting import Vetting

MEMORY_BYTES = 4 * 1024**3
"""The address space the vetting process may use."""
CHECK_SECONDS = 10.0
"""The longest one check may take to grade one sample run."""
MAX_REPLY_BYTES = 4 * 1024**2
"""The most the vetting process may send back; past it, it is stopped."""
STDERR_TAIL = 2000
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
"""Environment variables whose names hold one of these are not passed to the author's code."""


def vet_child(
    root: Path,
    parent: str,
    slug: str,
    files: Mapping[str, str],
    *,
    model: str | None,
    samples: Sequence[Run],
    timeout_s: float = 60.0,
    check_timeout_s: float = CHECK_SECONDS,
    memory_bytes: int = MEMORY_BYTES,
) -> Vetting:
    """Whether the child ``PARENT/SLUG`` that ``files`` define loads as a child of ``parent`` on ``model``
    and its checks grade ``samples`` without raising, found out in a separate process within ``timeout_s``."""
    started = time.monotonic()
    machines = Path(root) / "machines"
    _check_names(machines, parent, slug)
    refused = [f"{path!r} cannot be written: {why}" for path in files if (why := path_problem(path))]
    refused += [f"the child has no {name}: write one" for name in REQUIRED_FILES if name not in files]
    if refused:
        return Vetting(ok=False, problems=refused, model=model, seconds=time.monotonic() - started)
    request = {"parent": parent, "slug": slug, "model": model}
    limits = (timeout_s, check_timeout_s, memory_bytes)
    vetting = _vetted(machines, lambda copy: write_child(copy / parent / slug, files, model=model), request,
                      samples, ("machine.learn._vet_main", "the child"), limits)  # fmt: skip
    return vetting.model_copy(
        update={"ok": not vetting.problems, "model": model, "seconds": time.monotonic() - started}
    )


def vet_rubric(
    root: Path,
    name: str,
    draft: str,
    *,
    samples: Sequence[Run],
    timeout_s: float = 60.0,
    check_timeout_s: float = CHECK_SECONDS,
    memory_bytes: int = MEMORY_BYTES,
) -> Vetting:
    """Whether ``draft`` (the text of rubric_draft.py) defines a rubric and graders that fit machine
    ``name`` and whose checks grade ``samples`` without raising, found out as a child's files are."""
    started = time.monotonic()
    machines = Path(root) / "machines"
    if not (machines / name / "machine.py").is_file():
        raise NotFoundError(
            f"there is no machine {name!r} to draft a rubric for (no {machines / name}/machine.py)"
        )

    def write(copy: Path) -> None:
        (copy / name / DRAFT_FILE).write_text(draft, encoding="utf-8")

    request = {"parent": name, "name": name, "model": None}
    limits = (timeout_s, check_timeout_s, memory_bytes)
    vetting = _vetted(
        machines, write, request, samples, ("machine.learn._vet_draft", "the rubric draft"), limits
    )
    return vetting.model_copy(update={"ok": not vetting.problems, "seconds": time.monotonic() - started})


def _vetted(
    machines: Path,
    write: Callable[[Path], None],
    request: dict[str, Any],
    samples: Sequence[Run],
    process: tuple[str, str],
    limits: tuple[float, float, int],
) -> Vetting:
    """Copy ``machines`` to a temporary folder, ``write`` the author's files into the copy, and run
    ``process`` (its module, and what it vets, as its errors name it) on the copy with ``request``, in a
    process of its own, within the limits (seconds in all, seconds a check, bytes of memory)."""
    timeout_s, check_timeout_s, memory_bytes = limits
    module, label = process
    with tempfile.TemporaryDirectory(prefix="machine-vet-") as temporary:
        folder = Path(temporary).resolve()
        shutil.copytree(machines, folder / "machines", ignore=_skipped)
        write(folder / "machines")
        path = folder / "request.json"
        whole = {
            **request,
            "machines": str(folder / "machines"),
            "samples": [run.model_dump(mode="json") for run in samples],
            "check_s": check_timeout_s,
            "deadline": time.time() + max(timeout_s - 0.5, timeout_s * 0.8),
            "memory_bytes": memory_bytes,
        }
        path.write_text(json.dumps(whole), encoding="utf-8")
        outcome = _run(path, folder, timeout_s, module)
        return _vetting(outcome, timeout_s, memory_bytes, str(folder), label)


def _check_names(machines: Path, parent: str, slug: str) -> None:
    if not NAME_SEGMENT.match(slug):
        raise BadInputError(
            f"the child's slug {slug!r} is not a machine name: use lower-case letters, digits, '-' and '_'"
        )
    if not (machines / parent / "machine.py").is_file():
        raise NotFoundError(
            f"there is no machine {parent!r} to specialize (no {machines / parent}/machine.py)"
        )


def _skipped(folder: str, names: list[str]) -> list[str]:
    """What copying the machines folder leaves out: compiled files and hidden folders."""
    return [name for name in names if name == "__pycache__" or name.startswith(".")]


def child_environment() -> dict[str, str]:
    """The caller's environment without its secrets, and able to import this very library."""
    env = {k: v for k, v in os.environ.items() if not any(word in k.upper() for word in SECRET_WORDS)}
    library = str(Path(__file__).resolve().parents[2])
    if library not in {str(Path(p).resolve()) for p in site.getsitepackages()}:  # a source checkout
        env["PYTHONPATH"] = os.pathsep.join(p for p in (library, env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Outcome:
    """What the vetting process left: its result, its last progress, how it ended, its stderr's tail."""

    result: dict[str, Any] | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    timed_out: bool = False
    overflowed: bool = False
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=64))


def _read_replies(stream: IO[bytes], outcome: Outcome, stop: threading.Event) -> None:
    """Read the process's JSON lines up to its first result, then drain the rest unread; past the size
    allowed, ask for the process to be stopped (``stop``)."""
    total = 0
    with stream:
        for line in iter(lambda: stream.readline(MAX_REPLY_BYTES + 1), b""):
            total += len(line)
            if total > MAX_REPLY_BYTES:
                outcome.overflowed = True
                stop.set()
                break
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and isinstance(message.get("result"), dict):
                outcome.result = message["result"]
                break
            if isinstance(message, dict) and "stage" in message:
                outcome.progress = message
        for _ in iter(lambda: stream.read(65536), b""):
            pass


def _read_stderr(stream: IO[bytes], outcome: Outcome) -> None:
    """Keep the tail of what the process wrote to stderr; the stream is closed by this reader alone (a
    close from another thread would wait on the read it is blocked in)."""
    with stream:
        for chunk in iter(lambda: stream.read(4096), b""):
            outcome.stderr.append(chunk.decode("utf-8", "replace"))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _run(request: Path, cwd: Path, timeout_s: float, module: str) -> Outcome:
    """Run the vetting process on ``request``; kill its whole group at the limit or when it is done."""
    outcome, stop = Outcome(), threading.Event()
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", module, str(request)],
        cwd=cwd,
        env=child_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,
    )
    assert process.stdout is not None and process.stderr is not None
    replies = threading.Thread(target=_read_replies, args=(process.stdout, outcome, stop), daemon=True)
    errors = threading.Thread(target=_read_stderr, args=(process.stderr, outcome), daemon=True)
    replies.start()
    errors.start()
    deadline = time.monotonic() + timeout_s
    while replies.is_alive() and outcome.result is None and not stop.is_set() and time.monotonic() < deadline:
        replies.join(0.05)
    outcome.timed_out = replies.is_alive() and outcome.result is None and not outcome.overflowed
    _kill(process.pid)  # the process and whatever it started; it is not reaped yet, so its group is its own
    outcome.returncode = process.wait()
    replies.join(2.0)
    errors.join(2.0)  # a process that left the group may hold the pipes: its readers end when it does
    return outcome


def _doing(progress: Mapping[str, Any]) -> str:
    if progress.get("stage") == "grading":
        return (
            f" while the check of criterion {progress.get('criterion')!r} graded sample run "
            f"{progress.get('run')} (case {progress.get('case')!r})"
        )
    if progress.get("stage") == "loading":
        return f" while loading {progress.get('machine')!r}"
    return " while starting"


def _vetting(outcome: Outcome, timeout_s: float, memory_bytes: int, folder: str, label: str) -> Vetting:
    """The process's own result, or a problem that says how it ended without one."""
    if outcome.result is not None and not outcome.overflowed:
        try:
            return Vetting.model_validate(outcome.result)
        except ValidationError as error:
            return Vetting(problems=[f"the vetting process sent back a result that does not read: {error}"])
    doing = _doing(outcome.progress)
    if outcome.overflowed:
        what = f"sent back more than {MAX_REPLY_BYTES:,} bytes{doing}, and was stopped"
    elif outcome.timed_out:
        what = f"did not finish within {timeout_s:g} s{doing}, and was stopped"
    elif outcome.returncode is not None and outcome.returncode < 0:
        name = signal.Signals(-outcome.returncode).name
        what = (
            f"was killed by {name}{doing} (its memory is capped at {memory_bytes / 1024**3:g} GiB; "
            "a check or import that needs more is refused)"
        )
    else:
        what = f"exited with code {outcome.returncode}{doing} before it reported"
    tail = "".join(outcome.stderr).replace(folder + os.sep, "").strip()[-STDERR_TAIL:]
    said = f"; its last output: {tail}" if tail else ""
    return Vetting(problems=[f"the process vetting {label} {what}{said}"])
