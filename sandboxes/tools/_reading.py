"""Reading a text file by lines in bounded chunks: memory follows the lines shown, never the file or
one line of it (a line longer than the cut is skipped as it is read, not read whole and then cut)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from ._bounded import Deadline

CHUNK_BYTES = 64 * 1024
COUNT_BYTES = 256 * 1024 * 1024
"""How far past the lines shown the file is read to count its lines; past that the count is left open."""


@dataclass
class Window:
    """The lines of a file that were asked for, and what is known of the rest."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0
    """How many lines the file has (or, when ``counted`` is false, at least has)."""
    counted: bool = True
    cut_lines: bool = False
    out_of_time: bool = False


class _Scan:
    """The state of one pass over a file: which line the bytes are in, and the head of that line."""

    def __init__(self, offset: int, limit: int, max_chars: int, max_line_chars: int) -> None:
        self.offset, self.limit, self.max_chars, self.width = offset, limit, max_chars, max_line_chars
        self.number = 1  # the line the next byte belongs to
        self.head = bytearray()
        self.cut = False
        self.chars = 0
        self.window = Window()

    def wants(self) -> bool:
        return (
            self.number > self.offset and len(self.window.lines) < self.limit and self.chars < self.max_chars
        )

    def take(self, piece: bytes) -> None:
        room = self.width * 4 - len(self.head)  # 4 bytes hold any UTF-8 character
        if len(piece) > room:
            self.cut = True
        if room > 0:
            self.head += piece[:room]

    def end_line(self) -> None:
        text = self.head.decode("utf-8", errors="replace")
        if self.cut or len(text) > self.width:
            text = text[: self.width] + " … [line cut]"
            self.window.cut_lines = True
        else:
            text = text.rstrip("\r")
        self.window.lines.append((self.number, text))
        self.chars += len(text) + 8
        self.head.clear()
        self.cut = False

    def feed(self, chunk: bytes) -> None:
        pos = 0
        while pos < len(chunk):
            if not self.wants():
                newlines = chunk.count(b"\n", pos)
                if self.number <= self.offset and self.number + newlines > self.offset:
                    for _ in range(self.offset - self.number + 1):  # to the first wanted line
                        pos = chunk.index(b"\n", pos) + 1
                    self.number = self.offset + 1
                    continue
                self.number += newlines
                return
            newline = chunk.find(b"\n", pos)
            end = len(chunk) if newline == -1 else newline
            if self.cut:  # the line is already over its cut: its rest is only skipped
                pos = end
            else:
                self.take(chunk[pos:end])
            if newline == -1:
                return
            self.end_line()
            self.number += 1
            pos = newline + 1


def read_window(
    handle: BinaryIO, offset: int, limit: int, max_chars: int, max_line_chars: int, deadline: Deadline
) -> Window:
    """Lines ``offset + 1`` to ``offset + limit`` of ``handle`` (at most ``max_chars`` characters, each
    line cut at ``max_line_chars``), and the file's line count, read CHUNK_BYTES at a time."""
    scan = _Scan(offset, limit, max_chars, max_line_chars)
    last, past = b"", 0
    while chunk := handle.read(CHUNK_BYTES):
        if deadline.expired():
            scan.window.out_of_time = True
            break
        done = not scan.wants() and scan.number > offset
        if done:
            past += len(chunk)
            if past > COUNT_BYTES:
                scan.window.counted = False
                break
        scan.feed(chunk)
        last = chunk[-1:]
    window = scan.window
    unfinished = last not in (b"", b"\n")  # the file does not end with a newline
    if unfinished and scan.wants() and window.counted and not window.out_of_time:
        scan.end_line()
    window.total = scan.number - (0 if unfinished else 1)
    window.counted = window.counted and not window.out_of_time
    return window
