"""The process search_files matches in: a model's regular expression or glob can take as long as it
likes here, because the tool kills this process at its time limit or when the call is cancelled.

Run as a script (``python -I -S _search_worker.py``), standard library only. It reads nothing from disk:
the tool opens each file inside the working directory and sends its bytes. On stdin, frames of
``>II`` (tag, length) and a payload: the settings (JSON), the candidate paths ('\\0'-separated), then one
frame per file to search, tagged with the path's index. On stdout, one JSON list a line: ``["ready"]`` or
``["error", what, message]``, ``["kept", [indexes]]`` (the paths the glob keeps), ``["match", index, line,
text]``, ``["stopped"]`` past the match limit, and ``["end"]``.
"""

from __future__ import annotations

import json
import re
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct(">II")


def glob_regex(pattern: str) -> re.Pattern[str]:
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


def glob_keeps(regex: re.Pattern[str], has_slash: bool, relative: str) -> bool:
    """A glob without '/' is matched against the file name, one with '/' against the whole path."""
    return regex.match(relative if has_slash else relative.rsplit("/", 1)[-1]) is not None


def _frame(stream: IO[bytes]) -> tuple[int, bytes] | None:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    tag, size = HEADER.unpack(head)
    body = stream.read(size)
    return (tag, body) if len(body) == size else None


def _say(*record: Any) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def _limit_memory(max_bytes: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
    except (ImportError, ValueError, OSError):  # not on this system: the time limit still holds
        pass


def _search(regex: re.Pattern[str], settings: dict[str, Any], stream: IO[bytes]) -> None:
    found, most, width = 0, int(settings["max_matches"]), int(settings["max_line"])
    while (frame := _frame(stream)) is not None:
        index, data = frame
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
            line = line.rstrip("\r")
            if regex.search(line):
                if found >= most:
                    _say("stopped")
                    return
                text = line.strip()
                _say("match", index, number, text[:width] + "…" if len(text) > width else text)
                found += 1
    _say("end")


def main(stream: IO[bytes]) -> None:
    """Answer one search: settings, candidate paths, then the files to match, from ``stream``."""
    first = _frame(stream)
    if first is None:
        return
    settings = json.loads(first[1])
    _limit_memory(int(settings["memory_bytes"]))
    glob = settings["glob"]
    try:
        regex = re.compile(settings["pattern"])
    except (re.error, RecursionError, OverflowError) as error:
        _say("error", "pattern", str(error))
        return
    try:
        matcher = glob_regex(glob.lstrip("/") if "/" in glob else glob) if glob else None
    except (re.error, RecursionError, OverflowError) as error:
        _say("error", "glob", str(error))
        return
    _say("ready")
    names = _frame(stream)
    if names is None:
        return
    paths = names[1].decode("utf-8", errors="surrogateescape").split("\0") if names[1] else []
    slash = bool(glob) and "/" in glob
    _say("kept", [i for i, p in enumerate(paths) if matcher is None or glob_keeps(matcher, slash, p)])
    _search(regex, settings, stream)


if __name__ == "__main__":
    try:
        main(sys.stdin.buffer)
    except MemoryError:
        _say("error", "memory", "the search needed more memory than it may use")
    except (BrokenPipeError, KeyboardInterrupt):
        pass
