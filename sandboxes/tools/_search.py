"""search_files: the walk and every read happen here, inside the working directory; the matching
happens in a process of its own (``_search_worker``), killed at the time limit or when the call is
cancelled, because Python's ``re`` holds the interpreter for as long as one match takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from machine.runs import ToolFailure

from ._bounded import Deadline, in_thread
from ._paths import SNIFF_BYTES, _is_binary, _missing, _open_read, _resolve, _shown
from ._search_worker import HEADER

MAX_MATCHES = 200
MAX_MATCH_LINE = 300
SEARCH_SECONDS = 20.0
MAX_SEARCH_FILE_BYTES = 10_000_000
MAX_SEARCH_FILES = 100_000
MAX_FOLDER_ENTRIES = 20_000
WORKER_MEMORY_BYTES = 1 << 30
"""The address space the matching process may use: a pattern cannot take the host's memory."""
_WORKER = Path(__file__).with_name("_search_worker.py")
_RECORD_BYTES = 64 * 1024


@dataclass
class _Tally:
    results: list[str] = field(default_factory=list)
    binary: int = 0
    large: int = 0
    notes: list[str] = field(default_factory=list)
    stopped: str = ""


# ------------------------------------------------------------------------------------------- walking


def _folder(path: Path, skip: set[Path], deadline: Deadline) -> tuple[list[str], list[str], bool]:
    """The sub-folders and files of one folder, sorted, reading at most MAX_FOLDER_ENTRIES entries."""
    folders, files, read = [], [], 0
    try:
        with os.scandir(path) as scan:
            for entry in scan:
                read += 1
                if read > MAX_FOLDER_ENTRIES or (read % 1000 == 0 and deadline.expired()):
                    break
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git" and Path(entry.path) not in skip:
                        folders.append(entry.name)
                else:
                    files.append(entry.name)
    except OSError:
        return [], [], False
    return sorted(folders), sorted(files), read > MAX_FOLDER_ENTRIES


def _walk(sandbox: Any, root: Path, deadline: Deadline) -> tuple[list[Path], list[str]]:
    """Regular files under ``root`` in sorted, depth-first order (as ``os.walk`` goes); symlinks,
    .git and hidden folders skipped; bounded in files, entries per folder and time."""
    skip = set(getattr(sandbox, "hidden", ()))
    found: list[Path] = []
    notes: list[str] = []
    stack = [root]
    while stack and not deadline.expired():
        folder = stack.pop()
        folders, files, cut = _folder(folder, skip, deadline)
        if cut:
            notes.append(
                f"[{_shown(sandbox, folder)}/ has more than {MAX_FOLDER_ENTRIES:,} entries: "
                "only part of it was searched]"
            )
        found.extend(folder / name for name in files)
        if len(found) >= MAX_SEARCH_FILES:
            del found[MAX_SEARCH_FILES:]
            notes.append(f"[only the first {MAX_SEARCH_FILES:,} files were searched: narrow the path]")
            break
        stack.extend(folder / name for name in reversed(folders))
    return found, notes


def _prepare(sandbox: Any, path: str, deadline: Deadline) -> tuple[Path, list[Path], list[str], list[str]]:
    """The root, the files under it, how the model names each, and notes on what the walk left out."""
    root = _resolve(sandbox, path)
    if not root.exists():
        raise _missing(sandbox, root, path)
    files, notes = ([root], []) if root.is_file() else _walk(sandbox, root, deadline)
    return root, files, [_shown(sandbox, file) for file in files], notes


def _load(sandbox: Any, file: Path, _: Deadline) -> bytes | str | None:
    """The bytes of a file to search, 'large' or 'binary' for one skipped, None for one unreadable."""
    try:
        fd = _open_read(sandbox, file)
    except (OSError, ToolFailure):  # unreadable, or not a regular file
        return None
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_SEARCH_FILE_BYTES:
            return "large"
        data = handle.read(MAX_SEARCH_FILE_BYTES + 1)
    if len(data) > MAX_SEARCH_FILE_BYTES:
        return "large"
    return "binary" if _is_binary(data[:SNIFF_BYTES]) else data


# ------------------------------------------------------------------------------------------- matching


async def _send(process: Process, tag: int, data: bytes) -> None:
    assert process.stdin is not None
    await process.stdin.send(HEADER.pack(tag, len(data)))
    if data:
        await process.stdin.send(data)


async def _record(reader: BufferedByteReceiveStream) -> list[Any]:
    try:
        return list(json.loads(await reader.receive_until(b"\n", _RECORD_BYTES)))
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, ValueError):
        return ["error", "worker", "the matching process stopped without an answer"]


def _failed(record: list[Any], pattern: str, glob: str | None) -> ToolFailure:
    what, message = [*record[1:3], "", ""][:2]
    if what == "pattern":
        return ToolFailure(f"invalid regular expression {pattern!r}: {message}")
    if what == "glob":
        return ToolFailure(f"invalid glob {glob!r}: {message}")
    return ToolFailure(f"search_files failed: {message}")


async def _feed(sandbox: Any, process: Process, files: list[Path], kept: list[int], tally: _Tally) -> None:
    for index in kept:
        data = await in_thread(partial(_load, sandbox, files[index]), SEARCH_SECONDS)
        if data == "large":
            tally.large += 1
        elif data == "binary":
            tally.binary += 1
        elif isinstance(data, bytes):
            try:
                await _send(process, index, data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return  # the process stopped (at the match limit): it needs no more files
    assert process.stdin is not None
    await process.stdin.aclose()


async def _collect(reader: BufferedByteReceiveStream, names: list[str], tally: _Tally) -> None:
    while True:
        record = await _record(reader)
        if record[0] == "match":
            tally.results.append(f"{names[record[1]]}:{record[2]}: {record[3]}")
        elif record[0] == "stopped":
            tally.stopped = f"[stopped at {MAX_MATCHES} matches: narrow the pattern, path or glob]"
            return
        else:
            if record[0] == "error":
                tally.notes.append(f"[search stopped: {record[2]}]")
            return


async def _match(
    process: Process, job: dict[str, Any], sandbox: Any, files: list[Path], names: list[str], tally: _Tally
) -> None:
    assert process.stdout is not None
    reader = BufferedByteReceiveStream(process.stdout)
    await _send(process, 0, json.dumps(job).encode())
    ready = await _record(reader)
    if ready[0] != "ready":
        raise _failed(ready, job["pattern"], job["glob"])
    await _send(process, 0, "\0".join(names).encode("utf-8", errors="surrogateescape"))
    kept = await _record(reader)
    if kept[0] != "kept":
        raise _failed(kept, job["pattern"], job["glob"])
    async with anyio.create_task_group() as group:
        group.start_soon(_feed, sandbox, process, files, list(kept[1]), tally)
        await _collect(reader, names, tally)
        group.cancel_scope.cancel()  # done or stopped: the files left are not needed


async def _in_worker(
    job: dict[str, Any], sandbox: Any, files: list[Path], names: list[str], tally: _Tally
) -> None:
    process = await anyio.open_process(
        [sys.executable, "-I", "-S", str(_WORKER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _match(process, job, sandbox, files, names, tally)
    finally:  # out of time, cancelled or done: the process goes, and is reaped
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.aclose()


async def search(sandbox: Any, pattern: str, path: str, glob: str | None) -> str:
    """The matches of ``pattern`` under ``path`` as 'file:line: text' lines, with notes for what was
    skipped or cut; stops with what it found at SEARCH_SECONDS, and at once when cancelled."""
    started = time.monotonic()
    root, files, names, walk_notes = await in_thread(partial(_prepare, sandbox, path), SEARCH_SECONDS)
    tally = _Tally(notes=walk_notes)
    job = {
        "pattern": pattern,
        "glob": glob if glob and root.is_dir() else None,
        "max_matches": MAX_MATCHES,
        "max_line": MAX_MATCH_LINE,
        "memory_bytes": WORKER_MEMORY_BYTES,
    }
    with anyio.move_on_after(max(0.0, SEARCH_SECONDS - (time.monotonic() - started))) as scope:
        await _in_worker(job, sandbox, files, names, tally)
    if scope.cancelled_caught:
        tally.stopped = f"[search stopped after {SEARCH_SECONDS:g} s: narrow the pattern, path or glob]"
    return _report(sandbox, root, pattern, glob, tally)


def _report(sandbox: Any, root: Path, pattern: str, glob: str | None, tally: _Tally) -> str:
    where = "the working directory" if _shown(sandbox, root) == "." else repr(_shown(sandbox, root))
    lines = tally.results or [
        f"no matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob else "")
    ]
    if tally.binary:
        lines.append(f"[{tally.binary} binary file{'s' if tally.binary > 1 else ''} skipped]")
    if tally.large:
        s = "s" if tally.large > 1 else ""
        lines.append(f"[{tally.large} file{s} over {MAX_SEARCH_FILE_BYTES:,} bytes skipped]")
    lines += tally.notes
    if tally.stopped:
        lines.append(tally.stopped)
    return "\n".join(lines)
