"""The file tools: list, search, read, write and edit files in the run's directory."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from machine.runs import Tool, ToolContext, ToolFailure, tool

from ._paths import (
    SNIFF_BYTES,
    _is_binary,
    _missing,
    _open_read,
    _read_inside,
    _resolve,
    _sandbox,
    _shown,
    _write_inside,
)

MAX_LIST_ENTRIES = 500
MAX_DEPTH = 10
MAX_MATCHES = 200
MAX_MATCH_LINE = 300
SEARCH_SECONDS = 20.0
MAX_SEARCH_FILE_BYTES = 10_000_000
READ_LIMIT = 2000
MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2000


# ------------------------------------------------------------------------------------------- listing


def _list_files(sandbox: Any, path: str, depth: int) -> str:
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
                with os.scandir(folder) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
            except OSError as error:
                unreadable.append(f"{_shown(sandbox, folder)}/ ({error.strerror or error})")
                continue
            for entry in entries:
                if Path(entry.path) in hidden:
                    continue
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
    if cut:
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
    return await anyio.to_thread.run_sync(_list_files, _sandbox(ctx), path, depth)


# ----------------------------------------------------------------------------------------- searching


def _walk_files(root: Path, hidden: Iterable[Path] = ()) -> Iterator[Path]:
    """Regular files under ``root`` in sorted order; symlinks, .git and hidden folders are skipped."""
    skip = set(hidden)
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".git" and not os.path.islink(os.path.join(folder, d)) and Path(folder, d) not in skip
        )
        for name in sorted(filenames):
            candidate = Path(folder, name)
            if not candidate.is_symlink():
                yield candidate


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression: '*' and '?' stay within one folder, '**/' spans folders."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        char = pattern[i]
        closing = pattern.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif closing != -1:
            inner = pattern[i + 1 : closing]
            negate = inner.startswith("!")
            members = (inner[1:] if negate else inner).replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" if negate else "") + members.replace("^", "\\^") + "]")
            i = closing
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _glob_matches(relative: str, pattern: str) -> bool:
    """A glob without '/' is matched against the file name, one with '/' against the whole path."""
    if "/" not in pattern:
        return _glob_regex(pattern).match(relative.rsplit("/", 1)[-1]) is not None
    return _glob_regex(pattern.lstrip("/")).match(relative) is not None


def _search_files(sandbox: Any, pattern: str, path: str, glob: str | None) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ToolFailure(f"invalid regular expression {pattern!r}: {error}") from None
    root = _resolve(sandbox, path)
    if not root.exists():
        raise _missing(sandbox, root, path)
    files: Iterable[Path] = [root] if root.is_file() else _walk_files(root, getattr(sandbox, "hidden", ()))
    results: list[str] = []
    binary = large = 0
    stopped = ""
    started = time.monotonic()
    for file in files:
        relative = _shown(sandbox, file)
        if glob and file != root and not _glob_matches(relative, glob):
            continue
        if time.monotonic() - started > SEARCH_SECONDS:
            stopped = f"[search stopped after {SEARCH_SECONDS:g} s: narrow the path or glob]"
            break
        try:
            if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                large += 1
                continue
            data = _read_inside(sandbox, file)
        except (OSError, ToolFailure):  # unreadable, or not a regular file
            continue
        if _is_binary(data[:SNIFF_BYTES]):
            binary += 1
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
            line = line.rstrip("\r")
            if regex.search(line):
                if len(results) >= MAX_MATCHES:
                    stopped = f"[stopped at {MAX_MATCHES} matches: narrow the pattern, path or glob]"
                    break
                text = line.strip()
                if len(text) > MAX_MATCH_LINE:
                    text = text[:MAX_MATCH_LINE] + "…"
                results.append(f"{relative}:{number}: {text}")
        if stopped:
            break
    where = "the working directory" if _shown(sandbox, root) == "." else repr(_shown(sandbox, root))
    lines = results or [
        f"no matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob else "")
    ]
    if binary:
        lines.append(f"[{binary} binary file{'s' if binary > 1 else ''} skipped]")
    if large:
        lines.append(f"[{large} file{'s' if large > 1 else ''} over {MAX_SEARCH_FILE_BYTES:,} bytes skipped]")
    if stopped:
        lines.append(stopped)
    return "\n".join(lines)


@tool
async def search_files(ctx: ToolContext, pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search text files for a Python regular expression, line by line, and list each match as
    'file:line: text'. Binary files, symlinks and .git folders are skipped; at most 200 matches.

    pattern: a Python regular expression, e.g. 'def \\w+_test' or 'TODO'.
    path: the folder (or one file) to search, relative to the working directory; default '.'.
    glob: only search files whose name matches, e.g. '*.py', or whose path matches, e.g. 'src/**/*.py'."""
    return await anyio.to_thread.run_sync(_search_files, _sandbox(ctx), pattern, path, glob)


# ------------------------------------------------------------------------------------------- reading


def _read_file(sandbox: Any, path: str, offset: int, limit: int) -> str:
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
                size = target.stat().st_size
                raise ToolFailure(f"{shown!r} is a binary file ({size:,} bytes): read_file shows text only")
            handle.seek(0)
            lines: list[str] = []
            chars = 0
            total = 0
            long_lines = False
            last = offset
            for total, raw in enumerate(handle, start=1):
                if total <= offset or len(lines) >= limit or chars >= MAX_READ_CHARS:
                    continue
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if len(text) > MAX_LINE_CHARS:
                    text, long_lines = text[:MAX_LINE_CHARS] + " … [line cut]", True
                lines.append(f"{total:>6}\t{text}")
                chars += len(text) + 8
                last = total
    except OSError as error:
        raise ToolFailure(f"cannot read {shown!r}: {error.strerror or error}") from None
    if total == 0:
        return f"({shown} is empty)"
    if offset >= total:
        raise ToolFailure(f"offset {offset} is past the end: {shown} has {total} lines")
    notes = []
    if last < total:
        notes.append(f"[lines {offset + 1}-{last} of {total}; call read_file with offset={last} to read on]")
    if long_lines:
        notes.append(f"[lines longer than {MAX_LINE_CHARS} characters were cut]")
    return "\n".join(lines + notes)


@tool
async def read_file(ctx: ToolContext, path: str, offset: int = 0, limit: int = READ_LIMIT) -> str:
    """Read a text file of the working directory, with line numbers ('     12<TAB>text'; the number and
    tab are not part of the file). Long files come in parts: the reply ends with the offset to read on.

    path: the file, relative to the working directory.
    offset: how many lines to skip first (0 = from the start).
    limit: how many lines to show (default 2000)."""
    return await anyio.to_thread.run_sync(_read_file, _sandbox(ctx), path, offset, limit)


# ------------------------------------------------------------------------------------------- writing


def _write_file(sandbox: Any, path: str, content: str) -> str:
    target = _resolve(sandbox, path)
    shown = _shown(sandbox, target)
    if target.is_dir():
        raise ToolFailure(f"{path!r} is a folder: give the path of a file inside it")
    data = content.encode("utf-8", errors="surrogateescape")
    existed = target.exists()
    try:
        _write_inside(sandbox, target, data)
    except OSError as error:
        raise ToolFailure(f"cannot write {shown!r}: {error.strerror or error}") from None
    return f"wrote {len(data):,} bytes to {shown}" + (" (replaced it)" if existed else " (new file)")


@tool
async def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write a whole file in the working directory, creating it and its folders if needed and
    replacing it if it exists. To change part of an existing file, prefer edit_file.

    path: the file, relative to the working directory.
    content: the complete new text of the file."""
    return await anyio.to_thread.run_sync(_write_file, _sandbox(ctx), path, content)


def _positions(text: str, snippet: str) -> list[int]:
    """Every start of ``snippet`` in ``text``, overlapping ones included."""
    found, start = [], text.find(snippet)
    while start != -1:
        found.append(start)
        start = text.find(snippet, start + 1)
    return found


def _edit_file(sandbox: Any, path: str, old: str, new: str) -> str:
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
    try:
        data = _read_inside(sandbox, target)
    except OSError as error:
        raise ToolFailure(f"cannot read {shown!r}: {error.strerror or error}") from None
    text = data.decode("utf-8", errors="surrogateescape")  # bytes outside the edit round-trip exactly
    found = _positions(text, old)
    if not found and "\r\n" in text and "\n" in old and "\r\n" not in old:  # the file uses CRLF
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        found = _positions(text, old)
    if not found:
        raise ToolFailure(
            f"old was not found in {shown}; nothing was changed. Read the file and copy the text "
            "exactly, with its whitespace and indentation"
        )
    if len(found) > 1:
        numbers = sorted({text.count("\n", 0, p) + 1 for p in found})
        listed = ", ".join(str(n) for n in numbers[:20]) + (" …" if len(numbers) > 20 else "")
        raise ToolFailure(
            f"old occurs {len(found)} times in {shown} (line{'s' if len(numbers) > 1 else ''} {listed}); "
            "nothing was changed. Include more of the surrounding text so that it matches exactly once"
        )
    at = found[0]
    updated = (text[:at] + new + text[at + len(old) :]).encode("utf-8", errors="surrogateescape")
    try:
        _write_inside(sandbox, target, updated)
    except OSError as error:
        raise ToolFailure(f"cannot write {shown!r}: {error.strerror or error}") from None
    line = text.count("\n", 0, at) + 1
    return f"replaced 1 occurrence in {shown} at line {line}; the file now has {len(updated):,} bytes"


@tool
async def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """Replace one exact snippet of a file with new text. old must occur exactly once in the file,
    whitespace and indentation included; if it occurs zero or several times nothing is changed and
    the error says which (with the line numbers of the matches).

    path: the file, relative to the working directory.
    old: the exact text to replace (copy it from read_file, without the line numbers).
    new: the text to put in its place."""
    return await anyio.to_thread.run_sync(_edit_file, _sandbox(ctx), path, old, new)


FILE_TOOLS: tuple[Tool, ...] = (list_files, search_files, read_file, write_file, edit_file)
"""The tools that read and change files in the working directory (no commands, no network)."""
