"""The file tools: list, search, read, write and edit files in the run's directory."""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread

from machine.runs import Tool, ToolContext, ToolFailure, tool

from . import _bounded
from ._asked import Change, asked_then_made, asking, current
from ._bounded import Deadline, in_thread
from ._paths import SNIFF_BYTES, _is_binary, _missing, _open_read, _resolve, _sandbox, _shown, _write_inside
from ._reading import read_window
from ._search import MAX_MATCH_LINE, MAX_MATCHES, MAX_SEARCH_FILE_BYTES, SEARCH_SECONDS, search

MAX_LIST_ENTRIES = 500
MAX_DEPTH = 10
READ_LIMIT = 2000
MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2000
MAX_EDIT_BYTES = 10_000_000
"""edit_file refuses a larger file before reading it: the edit holds the whole file in memory."""
MAX_EDIT_MATCHES = 1000

__all__ = [
    "FILE_TOOLS",
    "MAX_DEPTH",
    "MAX_EDIT_BYTES",
    "MAX_LINE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_MATCHES",
    "MAX_MATCH_LINE",
    "MAX_READ_CHARS",
    "MAX_SEARCH_FILE_BYTES",
    "READ_LIMIT",
    "SEARCH_SECONDS",
    "edit_file",
    "list_files",
    "read_file",
    "search_files",
    "write_file",
]


# ------------------------------------------------------------------------------------------- listing


def _visible(
    scan: Iterator[os.DirEntry[str]], hidden: set[Path], deadline: Deadline
) -> Iterator[os.DirEntry[str]]:
    for count, entry in enumerate(scan):
        if count % 1000 == 999 and deadline.expired():
            return
        if Path(entry.path) not in hidden:
            yield entry


def _list_files(sandbox: Any, path: str, depth: int, deadline: Deadline) -> str:
    if not 1 <= depth <= MAX_DEPTH:
        raise ToolFailure(f"depth must be between 1 and {MAX_DEPTH}, not {depth}")
    root = _resolve(sandbox, path)
    if not root.exists():
        raise _missing(sandbox, root, path)
    if not root.is_dir():
        return _shown(sandbox, root)
    found: list[tuple[tuple[str, ...], str]] = []
    unreadable: list[str] = []
    level, cut = [root], False
    hidden = set(getattr(sandbox, "hidden", ()))  # private folders (a store) are not listed
    for _ in range(depth):  # breadth first, so a cut listing keeps the shallow levels whole
        below: list[Path] = []
        for folder in level:
            try:
                with os.scandir(folder) as scan:  # only the first names are kept, whatever the folder holds
                    wanted = MAX_LIST_ENTRIES + 1 - len(found)
                    entries = heapq.nsmallest(wanted, _visible(scan, hidden, deadline), key=lambda e: e.name)
            except OSError as error:
                unreadable.append(f"{_shown(sandbox, folder)}/ ({error.strerror or error})")
                continue
            if deadline.expired():
                cut = True
                break
            for entry in entries:
                if len(found) >= MAX_LIST_ENTRIES:
                    cut = True
                    break
                entry_path = Path(entry.path)
                relative = _shown(sandbox, entry_path)
                if entry.is_symlink():
                    try:
                        line = f"{relative} -> {os.readlink(entry_path)}"
                    except OSError:
                        line = f"{relative} -> ?"
                elif entry.is_dir(follow_symlinks=False):
                    line = relative + "/"
                    below.append(entry_path)
                else:
                    line = relative
                found.append((Path(relative).parts, line))
            if cut:
                break
        if cut or not below:
            break
        level = below
    lines = [line for _, line in sorted(found)]
    if not lines:
        lines = ["(empty folder)"]
    lines += [f"[could not read {u}]" for u in unreadable]
    if cut and deadline.expired():
        lines.append(
            f"[listing stopped after {deadline.seconds:g} s: list a subfolder, or pass a smaller depth]"
        )
    elif cut:
        lines.append(
            f"[listing cut at {MAX_LIST_ENTRIES} entries: list a subfolder, or pass a smaller depth]"
        )
    return "\n".join(lines)


@tool
async def list_files(ctx: ToolContext, path: str = ".", depth: int = 2) -> str:
    """List the files and folders under a folder of the working directory, sorted; folders end with
    '/', symlinks show their target. Hidden files are included.

    path: the folder, relative to the working directory ('.' for the top).
    depth: how many levels to go down (1 = only the folder's own entries; default 2, at most 10).
    Long listings are cut at 500 entries with a note."""
    return await in_thread(partial(_list_files, _sandbox(ctx), path, depth), _bounded.TOOL_SECONDS)


# ----------------------------------------------------------------------------------------- searching


@tool
async def search_files(ctx: ToolContext, pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search text files for a Python regular expression, line by line, and list each match as
    'file:line: text'. Binary files, symlinks and .git folders are skipped; at most 200 matches.

    pattern: a Python regular expression, e.g. 'def \\w+_test' or 'TODO'.
    path: the folder (or one file) to search, relative to the working directory; default '.'.
    glob: only search files whose name matches, e.g. '*.py', or whose path matches, e.g. 'src/**/*.py'."""
    return await search(_sandbox(ctx), pattern, path, glob)


# ------------------------------------------------------------------------------------------- reading


def _read_file(sandbox: Any, path: str, offset: int, limit: int, deadline: Deadline) -> str:
    if offset < 0:
        raise ToolFailure(f"offset must be 0 or more (lines to skip), not {offset}")
    if limit < 1:
        raise ToolFailure(f"limit must be 1 or more (lines to show), not {limit}")
    target = _resolve(sandbox, path)
    if target.is_dir():
        raise ToolFailure(f"{path!r} is a folder, not a file: list it with list_files")
    if not target.exists():
        raise _missing(sandbox, target, path)
    shown = _shown(sandbox, target)
    try:
        with os.fdopen(_open_read(sandbox, target), "rb") as handle:
            if _is_binary(handle.read(SNIFF_BYTES)):
                size = os.fstat(handle.fileno()).st_size
                raise ToolFailure(f"{shown!r} is a binary file ({size:,} bytes): read_file shows text only")
            handle.seek(0)
            window = read_window(handle, offset, limit, MAX_READ_CHARS, MAX_LINE_CHARS, deadline)
    except OSError as error:
        raise ToolFailure(f"cannot read {shown!r}: {error.strerror or error}") from None
    if window.out_of_time and not window.lines:
        raise ToolFailure(
            f"read_file stopped after {deadline.seconds:g} s before reaching line {offset + 1} of {shown}"
        )
    if window.total == 0 and window.counted:
        return f"({shown} is empty)"
    if offset >= window.total and window.counted:
        raise ToolFailure(f"offset {offset} is past the end: {shown} has {window.total} lines")
    last = window.lines[-1][0] if window.lines else offset
    notes = []
    if not window.counted:
        notes.append(
            f"[lines {offset + 1}-{last} of more than {window.total - 1:,} (too many to count); "
            f"call read_file with offset={last} to read on]"
        )
    elif last < window.total:
        notes.append(
            f"[lines {offset + 1}-{last} of {window.total}; call read_file with offset={last} to read on]"
        )
    if window.cut_lines:
        notes.append(f"[lines longer than {MAX_LINE_CHARS} characters were cut]")
    return "\n".join([f"{number:>6}\t{text}" for number, text in window.lines] + notes)


@tool
async def read_file(ctx: ToolContext, path: str, offset: int = 0, limit: int = READ_LIMIT) -> str:
    """Read a text file of the working directory, with line numbers ('     12<TAB>text'; the number and
    tab are not part of the file). Long files come in parts: the reply ends with the offset to read on.

    path: the file, relative to the working directory.
    offset: how many lines to skip first (0 = from the start).
    limit: how many lines to show (default 2000)."""
    return await in_thread(partial(_read_file, _sandbox(ctx), path, offset, limit), _bounded.TOOL_SECONDS)


# ------------------------------------------------------------------------------------------- writing


def _file_to_write(sandbox: Any, path: str) -> tuple[Path, str]:
    """The file ``path`` names, and how it is shown; a folder is refused."""
    target = _resolve(sandbox, path)
    if target.is_dir():
        raise ToolFailure(f"{path!r} is a folder: give the path of a file inside it")
    return target, _shown(sandbox, target)


def _write_file(sandbox: Any, path: str, content: str) -> str:
    target, shown = _file_to_write(sandbox, path)
    data = content.encode("utf-8", errors="surrogateescape")
    existed = target.exists()
    try:
        _write_inside(sandbox, target, data)
    except OSError as error:
        raise ToolFailure(f"cannot write {shown!r}: {error.strerror or error}") from None
    return f"wrote {len(data):,} bytes to {shown}" + (" (replaced it)" if existed else " (new file)")


def _planned_write(sandbox: Any, path: str, content: str) -> Change:
    target, shown = _file_to_write(sandbox, path)
    data = content.encode("utf-8", errors="surrogateescape")
    before = current(sandbox, target, shown)
    said = f"wrote {len(data):,} bytes to {shown}" + (" (new file)" if before is None else " (replaced it)")
    return Change(target=target, shown=shown, before=before, after=data, said=said)


@tool
async def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write a whole file in the working directory, creating it and its folders if needed and
    replacing it if it exists. To change part of an existing file, prefer edit_file.

    path: the file, relative to the working directory.
    content: the complete new text of the file."""
    sandbox, gate = _sandbox(ctx), asking(ctx)
    if gate is None:
        return await anyio.to_thread.run_sync(_write_file, sandbox, path, content)
    change = await anyio.to_thread.run_sync(_planned_write, sandbox, path, content)
    return await asked_then_made(sandbox, gate, "write_file", change)


def _positions(text: str, snippet: str, deadline: Deadline) -> list[int]:
    """Starts of ``snippet`` in ``text``, overlapping ones included, up to MAX_EDIT_MATCHES + 1."""
    found: list[int] = []
    start = text.find(snippet)
    while start != -1 and len(found) <= MAX_EDIT_MATCHES and not deadline.expired():
        found.append(start)
        start = text.find(snippet, start + 1)
    return found


def _line_numbers(text: str, positions: list[int], most: int) -> list[int]:
    """The line of each of the first positions, counted on from the one before (one pass over text)."""
    numbers: list[int] = []
    line, at = 1, 0
    for position in positions:
        line += text.count("\n", at, position)
        at = position
        if not numbers or numbers[-1] != line:
            numbers.append(line)
        if len(numbers) > most:
            break
    return numbers


def _read_for_edit(sandbox: Any, target: Path, shown: str) -> str:
    """The file's text, refused before reading when it is over MAX_EDIT_BYTES."""
    try:
        with os.fdopen(_open_read(sandbox, target), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = b"" if size > MAX_EDIT_BYTES else handle.read(MAX_EDIT_BYTES + 1)
    except OSError as error:
        raise ToolFailure(f"cannot read {shown!r}: {error.strerror or error}") from None
    if size > MAX_EDIT_BYTES or len(data) > MAX_EDIT_BYTES:
        raise ToolFailure(
            f"{shown} has {max(size, len(data)):,} bytes, over edit_file's limit of {MAX_EDIT_BYTES:,}; "
            "nothing was changed. Change it with a command (run) or write a new file with write_file"
        )
    return data.decode("utf-8", errors="surrogateescape")  # bytes outside the edit round-trip exactly


def _edited(sandbox: Any, path: str, old: str, new: str, deadline: Deadline) -> tuple[Change, int]:
    """The file's whole change, worked out and not written, and the line where it starts."""
    if not old:
        raise ToolFailure("old is empty: give the exact text to replace (use write_file to create a file)")
    if old == new:
        raise ToolFailure("old and new are the same: there is nothing to change")
    target = _resolve(sandbox, path)
    if target.is_dir():
        raise ToolFailure(f"{path!r} is a folder, not a file")
    if not target.exists():
        raise _missing(sandbox, target, path)
    shown = _shown(sandbox, target)
    text = _read_for_edit(sandbox, target, shown)
    found = _positions(text, old, deadline)
    if not found and "\r\n" in text and "\n" in old and "\r\n" not in old:  # the file uses CRLF
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        found = _positions(text, old, deadline)
    if deadline.expired():
        raise ToolFailure(f"edit_file stopped after {deadline.seconds:g} s; nothing was changed")
    if not found:
        raise ToolFailure(
            f"old was not found in {shown}; nothing was changed. Read the file and copy the text "
            "exactly, with its whitespace and indentation"
        )
    if len(found) > 1:
        numbers = _line_numbers(text, found, 20)
        listed = ", ".join(str(n) for n in numbers[:20]) + (" …" if len(numbers) > 20 else "")
        times = f"{MAX_EDIT_MATCHES:,} or more" if len(found) > MAX_EDIT_MATCHES else str(len(found))
        raise ToolFailure(
            f"old occurs {times} times in {shown} (line{'s' if len(numbers) > 1 else ''} {listed}); "
            "nothing was changed. Include more of the surrounding text so that it matches exactly once"
        )
    at = found[0]
    updated = (text[:at] + new + text[at + len(old) :]).encode("utf-8", errors="surrogateescape")
    line = text.count("\n", 0, at) + 1
    said = f"replaced 1 occurrence in {shown} at line {line}; the file now has {len(updated):,} bytes"
    before = text.encode("utf-8", errors="surrogateescape")
    return Change(target=target, shown=shown, before=before, after=updated, said=said), line


def _edit_file(sandbox: Any, path: str, old: str, new: str, deadline: Deadline) -> str:
    change, _ = _edited(sandbox, path, old, new, deadline)
    try:
        _write_inside(sandbox, change.target, change.after)
    except OSError as error:
        raise ToolFailure(f"cannot write {change.shown!r}: {error.strerror or error}") from None
    return change.said


@tool
async def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """Replace one exact snippet of a file with new text. old must occur exactly once in the file,
    whitespace and indentation included; if it occurs zero or several times nothing is changed and
    the error says which (with the line numbers of the matches).

    path: the file, relative to the working directory.
    old: the exact text to replace (copy it from read_file, without the line numbers).
    new: the text to put in its place.
    Files over 10,000,000 bytes are refused."""
    sandbox, gate = _sandbox(ctx), asking(ctx)
    if gate is None:
        return await in_thread(partial(_edit_file, sandbox, path, old, new), _bounded.TOOL_SECONDS)
    change, _ = await in_thread(partial(_edited, sandbox, path, old, new), _bounded.TOOL_SECONDS)
    return await asked_then_made(sandbox, gate, "edit_file", change)


FILE_TOOLS: tuple[Tool, ...] = (list_files, search_files, read_file, write_file, edit_file)
"""The tools that read and change files in the working directory (no commands, no network)."""
