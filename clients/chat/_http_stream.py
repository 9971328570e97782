"""An HTTP/1.1 reply's body as it arrives: by Content-Length, chunked, or up to the end of the connection.

Pieces come out as the peer's bytes land, so a streamed reply's events are parsed at once; the framing
is undone in a buffer, with no wait per chunk.
"""

from __future__ import annotations

import asyncio
import re
import zlib

READ_SIZE = 64 * 1024
"""The most bytes one read from the connection asks for."""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest reply body read (a completion is kilobytes; an endpoint sending more is broken)."""
_SIZE_LINE = re.compile(rb"[0-9A-Fa-f]{1,15}")


class HttpError(Exception):
    """The exchange failed on the way (refused, reset, closed early, not HTTP): a network error."""


class ReplyTooLarge(ValueError):
    """A reply body over the limit: the reply cannot be read."""


def too_large(size: int, limit: int) -> ReplyTooLarge:
    return ReplyTooLarge(f"the reply is {size} bytes or more, over the {limit} bytes a reply may be")


class ChunkedDecoder:
    """The chunked transfer coding undone incrementally: ``feed`` takes whatever arrived and returns the
    payload in it; ``done`` once the last chunk and its trailer have come."""

    __slots__ = ("_buf", "_crlf", "_left", "_trailer", "done")

    def __init__(self) -> None:
        self._buf = b""
        self._left = 0
        self._crlf = False
        self._trailer = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buf = self._buf + data if self._buf else data
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end and not self.done:
            if self._left:
                take = min(self._left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._left -= take
                self._crlf = not self._left
            elif self._crlf:
                if end - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise HttpError("a chunk of the reply does not end where its size says")
                pos += 2
                self._crlf = False
            else:
                line_end = buf.find(b"\r\n", pos)
                if line_end < 0:
                    if end - pos > 4096:
                        raise HttpError("the reply's chunk framing is garbled (a size line over 4 KiB)")
                    break
                line, pos = buf[pos:line_end], line_end + 2
                if self._trailer:
                    self.done = not line  # trailer fields are read past; an empty line ends the body
                    continue
                size = line.split(b";", 1)[0].strip()
                if not _SIZE_LINE.fullmatch(size):
                    raise HttpError(f"the reply's chunk framing is garbled: size line {line[:40]!r}")
                self._left = int(size, 16)
                self._trailer = not self._left
        self._buf = buf[pos:]
        return out[0] if len(out) == 1 else b"".join(out)


class Body:
    """One reply's body on its connection: ``length`` bytes, or chunked, or (neither) up to the end of the
    connection; at most ``limit`` bytes."""

    __slots__ = ("_chunks", "_left", "_limit", "_reader", "_seen", "done")

    def __init__(self, reader: asyncio.StreamReader, length: int | None, chunked: bool, limit: int) -> None:
        self._reader = reader
        self._left = length
        self._chunks = ChunkedDecoder() if chunked else None
        self._limit = limit
        self._seen = 0
        self.done = length == 0 and not chunked

    async def next(self) -> bytes:
        """The next piece of the body; ``b""`` at its end."""
        while not self.done:
            try:
                data = await self._reader.read(
                    READ_SIZE if self._left is None else min(READ_SIZE, self._left)
                )
            except OSError as error:
                raise HttpError("the connection failed in the middle of the reply") from error
            self._seen += len(data)
            if self._seen > self._limit:
                raise too_large(self._seen, self._limit)
            if self._chunks is not None:
                if not data:
                    raise HttpError("the connection closed in the middle of the reply (chunked)")
                piece = self._chunks.feed(data)
                self.done = self._chunks.done
            elif self._left is not None:
                if not data:
                    raise HttpError(
                        f"the connection closed with {self._left} bytes of the reply still to come"
                    )
                self._left -= len(data)
                piece, self.done = data, not self._left
            else:
                piece, self.done = data, not data
            if piece:
                return piece
        return b""

    async def read(self) -> bytes:
        """The whole body."""
        if self._left is not None and not self.done:
            try:
                data = await self._reader.readexactly(self._left)
            except asyncio.IncompleteReadError as error:
                missing = self._left - len(error.partial)
                raise HttpError(
                    f"the connection closed with {missing} bytes of the reply still to come"
                ) from None
            except OSError as error:
                raise HttpError("the connection failed in the middle of the reply") from error
            self._left, self.done = 0, True
            return data
        pieces = []
        while piece := await self.next():
            pieces.append(piece)
        return b"".join(pieces)


class Decoded:
    """A gzip or deflate content coding undone piece by piece (a server may send one though asked not to)."""

    __slots__ = ("_inflate", "_limit", "_made")

    def __init__(self, coding: str, limit: int = MAX_BODY_BYTES) -> None:
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise ValueError(f"the reply is encoded as {coding!r}, which this client cannot read")
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | (16 if "gzip" in coding else 0))
        self._limit = limit
        self._made = 0

    def __call__(self, piece: bytes) -> bytes:
        try:
            out = self._inflate.decompress(piece, self._limit - self._made + 1)
        except zlib.error as error:
            raise ValueError(f"the reply's compressed body is corrupt: {error}") from None
        self._made += len(out)
        if self._made > self._limit or self._inflate.unconsumed_tail:
            raise too_large(self._made, self._limit)
        return out
