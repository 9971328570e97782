"""The standard tools a machine's model uses: list_files, search_files, read_file, write_file,
edit_file and run act in the run's sandbox; web_fetch reads the web from the machine's process.

Every path a file tool takes goes through ``sandbox.resolve``, so ``..``, absolute paths and symlinks
that lead outside the run's directory come back to the model as a ToolFailure that says why. ``run``
refuses unless the sandbox isolates its commands, because the model wrote them.

``web_fetch`` is guarded against reaching the machine's own networks (see ``fetch``): the address
policy is checked by the code that opens each connection, on the address it connects to.
"""

from __future__ import annotations

import codecs
import difflib
import ipaddress
import os
import re
import socket
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import httpcore
import httpx

from machine._errors import BadInputError, MachineError
from machine._tools import Tool, ToolContext, ToolFailure, tool

from ._local import SandboxEscape

__all__ = [
    "FILE_TOOLS",
    "FetchError",
    "FetchRefused",
    "IPAddress",
    "Page",
    "Policy",
    "Resolver",
    "edit_file",
    "fetch",
    "html_to_text",
    "is_public_address",
    "list_files",
    "make_web_fetch",
    "public_only",
    "read_file",
    "resolve_host",
    "run",
    "search_files",
    "web_fetch",
    "write_file",
]

MAX_LIST_ENTRIES = 500
MAX_DEPTH = 10
MAX_MATCHES = 200
MAX_MATCH_LINE = 300
SEARCH_SECONDS = 20.0
MAX_SEARCH_FILE_BYTES = 10_000_000
READ_LIMIT = 2000
MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2000
MAX_RUN_TIMEOUT_S = 600.0
RUN_OUTPUT_CHARS = 20_000
FETCH_TIMEOUT_S = 15.0
FETCH_CHARS = 20_000
FETCH_MAX_BYTES = 5_000_000
MAX_REDIRECTS = 5
_SNIFF = 8192


# --------------------------------------------------------------------------------------------- paths


def _sandbox(ctx: ToolContext) -> Any:
    if ctx.sandbox is None:
        raise ToolFailure("this tool acts in the run's working directory, and this run has none")
    return ctx.sandbox


def _resolve(sandbox: Any, path: str) -> Path:
    """The host path of ``path``, or a ToolFailure saying that paths must stay inside."""
    try:
        resolved: Path = sandbox.resolve(path)
    except (SandboxEscape, BadInputError) as escape:
        raise ToolFailure(
            f"refused {path!r}: paths must stay inside the working directory ({escape}); "
            "give a relative path such as 'src/main.py'"
        ) from None
    except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a name the OS refuses
        raise ToolFailure(f"cannot use the path {path!r}: {error}") from None
    return resolved


def _shown(sandbox: Any, path: Path) -> str:
    """``path`` as the model names it: relative to the working directory, without resolving links."""
    try:
        return path.relative_to(sandbox.path).as_posix() or "."
    except ValueError:
        return str(sandbox.display(path))


def _missing(sandbox: Any, target: Path, asked: str) -> ToolFailure:
    """A not-found error that suggests the closest names and lists the nearest existing folder."""
    root: Path = sandbox.path
    folder = target.parent
    while folder != root and not folder.is_dir() and root in folder.parents:
        folder = folder.parent
    where = _shown(sandbox, folder)
    place = "the working directory" if where == "." else f"{where}/"
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ToolFailure(f"{asked!r} does not exist")
    message = f"{asked!r} does not exist."
    close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.6)
    if close:
        message += " Did you mean " + " or ".join(repr(_shown(sandbox, folder / n)) for n in close) + "?"
    if not names:
        return ToolFailure(f"{message} {place} is empty.")
    listed = [n + "/" if (folder / n).is_dir() and not (folder / n).is_symlink() else n for n in names[:30]]
    more = f" and {len(names) - 30} more" if len(names) > 30 else ""
    return ToolFailure(f"{message} {place} holds: {', '.join(listed)}{more}.")


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _opened_inside(sandbox: Any, fd: int) -> bool:
    """Whether an open file is really inside the sandbox. ``sandbox.resolve`` checked the path, but a
    command running at the same time could swap a folder for a symlink before the open; the kernel's
    name for the open file settles it. Where /proc is missing the resolve check stands alone."""
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return True
    root: Path = sandbox.path
    return real == root or root in real.parents


def _swapped(path: Path) -> ToolFailure:
    return ToolFailure(
        f"refused {path.name!r}: it now leads outside the working directory; paths must stay inside"
    )


def _open_read(sandbox: Any, target: Path) -> int:
    """A read-only descriptor of ``target``, never through a symlink swapped in after resolving."""
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)  # a FIFO must not block the tool
    if not _opened_inside(sandbox, fd):
        os.close(fd)
        raise _swapped(target)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolFailure(f"{target.name!r} is not a regular file (a pipe, socket or device)")
    return fd


def _read_inside(sandbox: Any, target: Path) -> bytes:
    with os.fdopen(_open_read(sandbox, target), "rb") as handle:
        return handle.read()


def _write_inside(sandbox: Any, target: Path, data: bytes) -> None:
    """Write ``target``, creating its folders, through a descriptor of its folder that is checked to
    be inside the sandbox before the file is created or truncated (and never through a symlink)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW)
    try:
        if not _opened_inside(sandbox, folder):
            raise _swapped(target.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW
        fd = os.open(target.name, flags, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolFailure(f"{target.name!r} is not a regular file (a pipe, socket or device)")
    os.ftruncate(fd, 0)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


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


def _walk_files(root: Path) -> Iterator[Path]:
    """Regular files under ``root`` in sorted order; symlinks and .git folders are skipped."""
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(folder, d))
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
    files: Iterable[Path] = [root] if root.is_file() else _walk_files(root)
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
        if _is_binary(data[:_SNIFF]):
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
            if _is_binary(handle.read(_SNIFF)):
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


# ------------------------------------------------------------------------------------------- running


@tool
async def run(ctx: ToolContext, command: str, timeout_s: float = 60) -> str:
    """Run a shell command in the working directory, isolated: no network, only this folder, an empty
    environment. Returns the exit code, stdout and stderr (each cut at 20,000 characters).

    command: a shell command line, e.g. 'python3 main.py' or 'pytest -q'.
    timeout_s: seconds before the command and everything it started are killed (default 60, at most 600)."""
    sandbox = _sandbox(ctx)
    if not sandbox.isolated:
        raise ToolFailure(
            "run is refused here: commands run only where bubblewrap isolation works, and this "
            "sandbox is not isolated. Use the file tools instead"
        )
    if not command.strip():
        raise ToolFailure("command is empty: give a shell command line")
    if not 0 < timeout_s <= MAX_RUN_TIMEOUT_S:
        raise ToolFailure(
            f"timeout_s must be more than 0 and at most {MAX_RUN_TIMEOUT_S:g}, not {timeout_s:g}"
        )
    try:
        result = await sandbox.exec(command, timeout_s=timeout_s, max_output=RUN_OUTPUT_CHARS)
    except OSError as error:
        raise ToolFailure(f"the command could not be started: {error}") from None
    if result.timed_out:
        head = f"timed out after {timeout_s:g} s: the command and every process it started were killed"
    else:
        head = f"exit code: {result.exit_code}"
    if getattr(result, "truncated", False):
        head += f"\n[output cut: each stream keeps its first {RUN_OUTPUT_CHARS:,} characters]"
    return "\n".join(
        [
            head,
            "--- stdout ---",
            result.stdout.rstrip("\n") or "(empty)",
            "--- stderr ---",
            result.stderr.rstrip("\n") or "(empty)",
        ]
    )


FILE_TOOLS: tuple[Tool, ...] = (list_files, search_files, read_file, write_file, edit_file)
"""The tools that read and change files in the working directory (no commands, no network)."""


# ---------------------------------------------------------------------------- web: the address policy

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REFUSED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network", 0.0.0.0 among it
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, the cloud metadata service at 169.254.169.254 among it
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relays (deprecated)
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, the broadcast address among it
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_REFUSED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "2001::/23",  # IETF protocol assignments, Teredo (2001::/32) among them
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4: the packet really goes to the IPv4 address inside
        "3fff::/20",  # documentation
    )
)


def is_public_address(address: IPAddress | str) -> bool:
    """Whether web_fetch may connect to ``address``: a public unicast address, never loopback,
    private, link-local, carrier-grade NAT, multicast, reserved, unspecified or documentation.

    IPv6 must be global unicast (2000::/3), which leaves out unique-local fc00::/7, link-local
    fe80::/10 and multicast; IPv4-mapped addresses (::ffff:a.b.c.d) and the NAT64 prefix
    64:ff9b::/96 are judged by the IPv4 address inside; the tunnelling prefixes Teredo and 6to4
    are refused outright, since their real destination is an IPv4 address hidden inside."""
    if isinstance(address, str):
        try:
            address = ipaddress.ip_address(address)
        except ValueError:
            return False
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        if address in _NAT64:
            return is_public_address(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.scope_id or address not in _GLOBAL_UNICAST_V6:
            return False
        if any(address in network for network in _REFUSED_V6):
            return False
    elif any(address in network for network in _REFUSED_V4):
        return False
    # The standard library's view as well: a later Python that knows more special ranges only refuses more.
    return address.is_global and not (
        address.is_multicast
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_unspecified
    )


def public_only(address: IPAddress, port: int) -> bool:
    """The default policy of web_fetch: any port, public addresses only."""
    return is_public_address(address)


_INTERNAL_SUFFIXES = ("localhost", "local", "localdomain", "internal", "intranet", "lan", "home", "corp")


def _internal_name(host: str) -> bool:
    """A name that only means something inside a private network: localhost, mDNS (.local),
    .internal (cloud metadata), home.arpa and the like, or a single label that the resolver would
    complete with the machine's search domains."""
    name = host.rstrip(".").lower()
    if "." not in name:
        return True
    return name == "home.arpa" or name.endswith(".home.arpa") or name.rsplit(".", 1)[-1] in _INTERNAL_SUFFIXES


Resolver = Callable[[str], Awaitable[Sequence[str]]]
"""Host name -> the IP addresses it resolves to (as text)."""
Policy = Callable[[IPAddress, int], bool]
"""(address, port) -> whether web_fetch may connect there."""


async def resolve_host(host: str) -> list[str]:
    """The system resolver (getaddrinfo), each address once, in the order given."""
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class FetchError(MachineError):
    """A page that could not be fetched: the message says why, and names the URL."""


class FetchRefused(FetchError):
    """A URL, name or address web_fetch will not connect to."""


def _literal(host: str) -> list[IPAddress] | None:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        return None


async def _vetted(host: str, port: int, resolve: Resolver, allow: Policy) -> list[IPAddress]:
    """Resolve ``host`` once and check every address it has; one refused address refuses the host,
    so that a name resolving to a public and a private address cannot win by retrying."""
    addresses = _literal(host)
    if addresses is None:
        if _internal_name(host):
            raise FetchRefused(f"{host} is an internal name; web_fetch reads public sites only")
        try:
            addresses = [ipaddress.ip_address(a) for a in await resolve(host)]
        except (OSError, ValueError) as error:
            raise FetchError(f"could not resolve {host}: {error}") from None
        if not addresses:
            raise FetchError(f"could not resolve {host}: it has no address")
    for address in addresses:
        if not allow(address, port):
            named = "" if str(address) == host else f" ({host} resolves to it)"
            raise FetchRefused(
                f"{address}{named} is a private, loopback, link-local or otherwise non-public address; "
                "web_fetch reads public sites only"
            )
    return addresses


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the address policy in front: every TCP connection is opened
    to an address that was resolved once and checked, never to a name that is resolved again."""

    def __init__(self, resolve: Resolver, allow: Policy) -> None:
        self._resolve = resolve
        self._allow = allow
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _vetted(host, port, self._resolve, self._allow)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise FetchRefused("web_fetch does not connect to local sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class _CoreStream(httpx.AsyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_stream():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


class _GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore pool that uses the guarded backend. httpcore still sees
    the URL's host name, so the Host header, TLS SNI and certificate checks are those of the name."""

    def __init__(self, resolve: Resolver, allow: Policy) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            network_backend=_GuardedBackend(resolve, allow),
            http1=True,
            http2=False,
            retries=0,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CoreStream(response),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


@dataclass(frozen=True)
class Page:
    """A fetched page, as text."""

    url: str
    """The URL asked for."""
    final_url: str
    """The URL the text came from, after redirects."""
    status: int
    content_type: str
    text: str
    title: str = ""
    redirects: tuple[str, ...] = ()
    cut: bool = False
    """Whether the body was longer than the download limit and only its start was read."""


_REDIRECTS = {301, 302, 303, 307, 308}
_TEXT_TYPES = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/rss+xml",
    "application/atom+xml",
}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}


def _url(raw: str) -> httpx.URL:
    text = raw.strip()
    if "://" not in text and re.match(r"^[\w.-]+\.[a-zA-Z]{2,}(:\d+)?(/|$)", text):
        text = "https://" + text  # 'example.com/page' means the site, not a relative path
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise FetchError(f"{raw!r} is not a usable URL: {error}") from None
    if url.scheme not in ("http", "https"):
        raise FetchRefused(
            f"{raw!r} uses {'the ' + url.scheme + ':' if url.scheme else 'no'} scheme; "
            "web_fetch reads http and https URLs only"
        )
    if not url.host:
        raise FetchError(f"{raw!r} has no host name")
    return url


def _kind(media: str, head: bytes) -> Literal["html", "text"] | None:
    if media in _HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml")):
        return "text"
    if media in ("", "application/octet-stream") and not _is_binary(head):
        start = head.lstrip()[:64].lower()
        return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"
    return None


def _charset(declared: str | None, head: bytes) -> str:
    candidates = [declared]
    found = re.search(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", head[:4096], re.IGNORECASE)
    if found:
        candidates.append(found.group(1).decode("ascii", errors="replace"))
    for name in candidates:
        if name:
            try:
                return codecs.lookup(name).name
            except LookupError:
                continue
    return "utf-8"


async def _read_body(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


async def fetch(
    url: str,
    *,
    resolve: Resolver = resolve_host,
    allow: Policy = public_only,
    timeout_s: float = FETCH_TIMEOUT_S,
    max_redirects: int = MAX_REDIRECTS,
    max_bytes: int = FETCH_MAX_BYTES,
) -> Page:
    """Fetch ``url`` as text, following up to ``max_redirects`` redirects, all within ``timeout_s``.

    Only http and https. Every connection is opened by a network backend that resolves the host once
    with ``resolve``, refuses internal names, checks EVERY address with ``allow`` and then connects to
    a checked address, so a name cannot resolve to one address when checked and another when used.
    Only the TCP connect is pinned: httpcore still works with the URL's name, so the Host header, TLS
    SNI and certificate verification are those of the name, as without the guard.
    Redirects are followed here, one request at a time, so each hop goes through the same check.
    Environment proxies are ignored (a proxy would make the checked address the proxy's).
    Raises FetchRefused for a URL or address the policy refuses and FetchError for other failures."""
    current = _url(url)
    redirects: list[str] = []
    transport = _GuardedTransport(resolve, allow)
    headers = {
        "User-Agent": "machine-web-fetch/0.1",
        "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
    }
    try:
        with anyio.fail_after(timeout_s):
            async with httpx.AsyncClient(
                transport=transport,
                trust_env=False,
                follow_redirects=False,
                timeout=timeout_s,
                headers=headers,
            ) as client:
                for _ in range(max_redirects + 1):
                    async with client.stream("GET", current) as response:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location:
                            redirects.append(str(current))
                            current = _url(str(current.join(location)))
                            continue
                        return await _page(url, current, response, tuple(redirects), max_bytes)
                raise FetchError(f"{url} redirected more than {max_redirects} times; stopped at {current}")
    except TimeoutError:
        raise FetchError(f"fetching {current} timed out after {timeout_s:g} s") from None
    except (httpcore.TimeoutException, httpx.TimeoutException):
        raise FetchError(f"fetching {current} timed out") from None
    except FetchError:
        raise
    except (httpcore.ConnectError, httpx.ConnectError) as error:
        raise FetchError(f"could not connect to {current.host}: {error or 'connection failed'}") from None
    except (
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpx.HTTPError,
        httpx.InvalidURL,
        OSError,
    ) as error:
        raise FetchError(f"fetching {current} failed: {error or type(error).__name__}") from None


async def _page(
    asked: str, url: httpx.URL, response: httpx.Response, redirects: tuple[str, ...], max_bytes: int
) -> Page:
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ("", "application/octet-stream") and _kind(media, b"") is None:
        raise FetchError(f"{url} is {media}, not text: web_fetch reads HTML and text pages only")
    body, cut = await _read_body(response, max_bytes)
    kind = _kind(media, body[:_SNIFF])
    if kind is None:
        kind_shown = media or "no content type"
        raise FetchError(f"{url} is binary ({kind_shown}): web_fetch reads HTML and text pages only")
    charset = _charset(response.charset_encoding, body if kind == "html" else b"")
    decoded = body.decode(charset, errors="replace")
    title = ""
    if kind == "html":
        title, decoded = html_to_text(decoded, base=str(url))
    return Page(
        url=asked,
        final_url=str(url),
        status=response.status_code,
        content_type=media or "unknown",
        text=decoded,
        title=title,
        redirects=redirects,
        cut=cut,
    )


def _render(page: Page, offset: int, limit: int = FETCH_CHARS) -> str:
    total = len(page.text)
    if offset > 0 and offset >= total:
        raise ToolFailure(
            f"offset {offset} is past the end: the text of {page.final_url} has {total:,} characters"
        )
    end = min(total, offset + limit)
    head = [f"URL: {page.final_url}"]
    if page.redirects:
        head.append(f"(redirected from {page.redirects[0]})")
    head.append(f"Status: {page.status}")
    if page.title:
        head.append(f"Title: {page.title}")
    head.append(f"Characters {offset:,}-{end:,} of {total:,} ({page.content_type})")
    parts = ["\n".join(head), "", page.text[offset:end] or "(the page has no text)"]
    if end < total:
        parts += ["", f"[{total - end:,} more characters: call web_fetch with offset={end} to read on]"]
    if page.cut:
        parts += ["", f"[the page is larger than {FETCH_MAX_BYTES:,} bytes: only its start was read]"]
    return "\n".join(parts)


def make_web_fetch(*, resolve: Resolver = resolve_host, allow: Policy = public_only) -> Tool:
    """A web_fetch tool with its own resolver and address policy (tests use a local server this way);
    the module's ``web_fetch`` uses the system resolver and public addresses only."""

    async def web_fetch(url: str, offset: int = 0) -> str:
        """Fetch a web page (http or https) and return its text: HTML becomes text with scripts and
        styles removed, headings marked with '#' and links written [text](url); other text types come
        as they are; binary files are refused. At most 20,000 characters a call: a longer page ends
        with the offset to pass to read on. Private, loopback (localhost), link-local and internal
        addresses are refused, on redirects too.

        url: the full address, e.g. 'https://example.com/page'.
        offset: the character to start from (0 for the beginning)."""
        if offset < 0:
            raise ToolFailure(f"offset must be 0 or more, not {offset}")
        try:
            page = await fetch(url, resolve=resolve, allow=allow)
        except FetchError as error:
            raise ToolFailure(str(error)) from None
        return _render(page, offset)

    built: Tool = tool(web_fetch)
    return built


web_fetch: Tool = make_web_fetch()


# ---------------------------------------------------------------------------------------- HTML to text

_SKIPPED = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl", "dt", "dd",
    "fieldset", "figcaption", "figure", "footer", "form", "header", "main", "nav", "ol", "p",
    "section", "summary", "table", "ul", "caption",
}  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


@dataclass
class _Link:
    href: str
    start: int


class _TextMaker(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.skipping: list[str] = []
        self.links: list[_Link] = []
        self.pre = 0
        self.lists = 0
        self.in_title = False

    def _ending(self) -> str:
        return "".join(self.parts[-3:])[-2:]

    def _break(self, lines: int) -> None:
        ending = self._ending()
        if not self.parts:
            return
        have = len(ending) - len(ending.rstrip("\n"))
        if have < lines:
            self.parts.append("\n" * (lines - have))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping.append(tag)
            return
        if self.skipping:
            return
        if tag == "title":
            self.in_title = True
        elif tag in _HEADINGS:
            self._break(2)
            self.parts.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            self.parts.append("  " * max(self.lists - 1, 0) + "- ")
        elif tag in ("ul", "ol"):
            self.lists += 1
            self._break(1 if self.lists > 1 else 2)
        elif tag == "pre":
            self._break(2)
            self.parts.append("```\n")
            self.pre += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "hr":
            self._break(2)
            self.parts.append("---")
            self._break(2)
        elif tag == "tr":
            self._break(1)
        elif tag in ("td", "th"):
            if not self._ending().endswith("\n") and self.parts:
                self.parts.append(" | ")
        elif tag in _BLOCKS:
            self._break(2 if tag == "p" else 1)
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            self.links.append(_Link(href, len(self.parts)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.parts.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            return
        if tag == "title":
            self.in_title = False
        elif tag in _HEADINGS or tag == "p":
            self._break(2)
        elif tag in ("ul", "ol"):
            self.lists = max(self.lists - 1, 0)
            self._break(2 if self.lists == 0 else 1)
        elif tag == "pre":
            self.pre = max(self.pre - 1, 0)
            self._break(1)
            self.parts.append("```")
            self._break(2)
        elif tag in _BLOCKS or tag in ("li", "tr"):
            self._break(1)
        elif tag == "a" and self.links:
            self._close_link(self.links.pop())

    def _close_link(self, link: _Link) -> None:
        text = " ".join("".join(self.parts[link.start :]).split())
        href = link.href.strip()
        if not text or not href or href.startswith(("#", "javascript:")):
            return
        try:
            target = str(httpx.URL(self.base).join(href)) if self.base else href
        except (httpx.InvalidURL, ValueError, TypeError):
            target = href
        self.parts[link.start :] = [f"[{text}]({target})"]

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.skipping:
            return
        if self.pre:
            self.parts.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._ending().endswith(("\n", " ")) or not self.parts:
            text = text.lstrip(" ")
        if text:
            self.parts.append(text)


def html_to_text(html: str, *, base: str = "") -> tuple[str, str]:
    """(title, text) of an HTML page: scripts, styles and other non-text parts removed, headings as
    '#', list items as '-', preformatted blocks fenced, links as [text](absolute url)."""
    maker = _TextMaker(base=base)
    maker.feed(html)
    maker.close()
    while maker.links:
        maker._close_link(maker.links.pop())
    text = "".join(maker.parts)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join("".join(maker.title_parts).split())
    return title, text
