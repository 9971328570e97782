"""Server-sent events, parsed as the bytes arrive: a streamed reply's ``data`` payloads, one per event.

Only ``data`` matters to a chat-completions stream; comments (``: OPENROUTER PROCESSING``) and the other
fields are read past. Lines end in LF or CRLF.
"""

from __future__ import annotations

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The largest event kept whole while it arrives."""


class EventTooLarge(ValueError):
    """An event that never ends: the stream cannot be read."""


class SSEParser:
    """Feed it the body's pieces; each call returns the ``data`` of the events those pieces completed."""

    __slots__ = ("_buf", "_data", "_size")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, piece: bytes) -> list[bytes]:
        buf = self._buf + piece if self._buf else piece
        events: list[bytes] = []
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            line = buf[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:  # a blank line ends the event
                if self._data:
                    events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                    self._data, self._size = [], 0
            elif line.startswith(b"data:"):
                value = line[6:] if line.startswith(b"data: ") else line[5:]
                self._data.append(value)
                self._size += len(value)
        self._buf = buf[start:]
        if self._size + len(self._buf) > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event of the streamed reply runs past {MAX_EVENT_BYTES} bytes")
        return events

    def close(self) -> list[bytes]:
        """The events left when the stream ends (a last event with no blank line after it)."""
        return self.feed(b"\n\n") if self._buf or self._data else []
