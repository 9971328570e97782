"""A response body's Content-Encoding, undone as the body arrives and never further than asked: a
few kilobytes of stacked gzip on the wire cannot become gigabytes in memory, because every layer
inflates at most the piece the layer above asks for (``zlib``'s ``max_length``)."""

from __future__ import annotations

import zlib
from typing import Protocol

from ._address import FetchError

PIECE_BYTES = 64 * 1024
MAX_ENCODINGS = 4
ACCEPT_ENCODING = "gzip, deflate"
"""What web_fetch asks servers for: the encodings it can undo within its limits."""


class _Source(Protocol):
    def pull(self, most: int) -> bytes: ...


class _Raw:
    """The bytes from the wire not yet taken by the first layer."""

    def __init__(self) -> None:
        self.buffer = b""

    def pull(self, most: int) -> bytes:
        piece, self.buffer = self.buffer[:most], self.buffer[most:]
        return piece


class _Inflate:
    """One gzip or deflate layer, inflating at most ``most`` bytes a pull."""

    def __init__(self, source: _Source, name: str) -> None:
        self.source, self.name = source, name
        self.wbits = 16 + zlib.MAX_WBITS if name in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self.inflater = zlib.decompressobj(self.wbits)
        self.pending = b""
        self.started = False

    def _inflate(self, most: int) -> bytes:
        try:
            out = self.inflater.decompress(self.pending, most)
        except zlib.error:
            if self.name != "deflate" or self.started or self.wbits < 0:
                raise FetchError(f"the page's {self.name} encoding is damaged") from None
            self.wbits = -zlib.MAX_WBITS  # deflate without its zlib header, as some servers send it
            self.inflater = zlib.decompressobj(self.wbits)
            out = self.inflater.decompress(self.pending, most)
        self.started = self.started or bool(out)
        self.pending = self.inflater.unconsumed_tail
        if self.inflater.eof:
            rest = self.inflater.unused_data + self.pending
            self.inflater = zlib.decompressobj(self.wbits)  # gzip allows members one after another
            self.pending = rest if self.wbits > 16 else b""
        return out

    def pull(self, most: int) -> bytes:
        while True:
            if not self.pending:
                self.pending = self.source.pull(PIECE_BYTES)
                if not self.pending:
                    return b""
            out = self._inflate(most)
            if out:
                return out


class Decoder:
    """Raw body bytes in (``push``), decoded bytes out (``pull``), each pull at most what is asked."""

    def __init__(self, content_encoding: str) -> None:
        names = [name.strip().lower() for name in content_encoding.split(",") if name.strip()]
        names = [name for name in names if name != "identity"]
        if len(names) > MAX_ENCODINGS:
            raise FetchError(
                f"the page is encoded {len(names)} times over; web_fetch undoes at most {MAX_ENCODINGS}"
            )
        self._raw = _Raw()
        stage: _Source = self._raw
        for name in reversed(names):  # the last encoding listed was applied last: undone first
            if name not in ("gzip", "x-gzip", "deflate"):
                raise FetchError(f"the page uses the content encoding {name!r}, which web_fetch cannot read")
            stage = _Inflate(stage, name)
        self._out = stage

    def push(self, raw: bytes) -> None:
        """Bytes from the wire, in order."""
        self._raw.buffer += raw

    def pull(self, most: int) -> bytes:
        """Up to ``most`` decoded bytes; empty when more of the body is needed."""
        return self._out.pull(most)
