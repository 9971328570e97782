"""A small pooled HTTP/1.1 client on asyncio streams: what a model call needs, a POST on a kept-alive
connection, at microseconds of our time where a general client takes milliseconds.

Connections are kept per host and port (``max_idle`` idle at most); one the server closed while idle is
noticed, or, when the request finds it dead, replaced once. HTTPS is TLS from ``ssl``'s default context
(with certifi's roots, as httpx has them). Timeouts are the caller's: a request cancelled mid-way closes
its connection rather than pooling it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urljoin, urlsplit

from ._http_stream import MAX_BODY_BYTES, Body, Decoded, HttpError, ReplyTooLarge, too_large

if TYPE_CHECKING:
    import ssl

__all__ = ["HttpError", "HttpPool", "Reply", "ReplyTooLarge", "Transport", "Url"]

MAX_HEAD_BYTES = 64 * 1024
IDLE_S = 30.0
"""A connection idle longer than this is not reused (servers drop idle ones after a while)."""
MAX_IDLE = 64
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Url:
    """An http(s) URL split once: where to connect and what to ask for."""

    text: str
    scheme: str
    host: str
    port: int
    target: str
    """The path and query, as the request line carries them."""

    @classmethod
    def parse(cls, url: str) -> Url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(url, parts.scheme, parts.hostname, port, target)

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def authority(self) -> str:
        """The Host header: the port only when it is not the scheme's own."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = self.port == (443 if self.scheme == "https" else 80)
        return host if default else f"{host}:{self.port}"


class Reply(Protocol):
    """A reply whose head has come: read its body once, whole or in pieces, then ``aclose`` it."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]:
        """Names lower-cased."""

    async def read(self) -> bytes: ...
    def __aiter__(self) -> AsyncIterator[bytes]: ...
    async def aclose(self) -> None: ...


class Transport(Protocol):
    """Sends a POST and returns its reply: our pool, or httpx when a proxy is in the way."""

    async def post(self, url: Url, headers: Mapping[str, str], body: bytes) -> Reply: ...
    async def aclose(self) -> None: ...


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The system's roots and certifi's (the roots httpx and the SDK trusted), HTTP/1.1 by ALPN."""
    import ssl  # only for https endpoints

    context = ssl.create_default_context()
    with contextlib.suppress(ImportError, OSError):
        import certifi

        context.load_verify_locations(certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Stale(Exception):
    """A pooled connection found closed by the server before any byte of the reply."""


class _Connection:
    __slots__ = ("idle_since", "reader", "reused", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.idle_since = 0.0
        self.reused = False

    def alive(self, now: float) -> bool:
        closed = self.reader.at_eof() or self.writer.is_closing() or self.reader.exception() is not None
        return not closed and now - self.idle_since < IDLE_S

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a loop that has ended cannot schedule the close
            self.writer.close()


def parse_head(raw: bytes) -> tuple[int, dict[str, str], bool]:
    """Status, headers (lower-cased names) and whether the connection stays open, from a reply's head."""
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit() or rest[3:4] not in ("", " "):
        raise HttpError(f"the reply is not HTTP/1.1: it begins {lines[0][:60]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HttpError(f"a header line of the reply is malformed: {line[:60]!r}")
        key, value = name.lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    connection = headers.get("connection", "").lower()
    keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    return int(code), headers, keep


def _garbled(partial: bytes) -> str:
    if not partial.startswith(b"HTTP/"):
        return f"the reply is not HTTP: it begins {partial[:40]!r}"
    return "the connection closed in the middle of the reply's head"


class Response:
    """A reply on one of the pool's connections, which goes back to the pool once the body is read."""

    def __init__(
        self, pool: HttpPool, origin: tuple[str, str, int], conn: _Connection, head: bytes, max_body: int
    ) -> None:
        self.status, self.headers, keep = parse_head(head)
        self._pool, self._origin = pool, origin
        self._conn: _Connection | None = conn
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length: int | None = None
        if self.status in (204, 304) or 100 <= self.status < 200:
            length = 0
        elif not chunked and "content-length" in self.headers:
            raw = self.headers["content-length"]
            if not raw.isdigit():
                raise HttpError(f"the reply's Content-Length {raw[:40]!r} is not a number")
            length = int(raw)
            if length > max_body:
                raise too_large(length, max_body)
        self._keep = keep and (chunked or length is not None) and self.status != 101
        self._body = Body(conn.reader, length, chunked, max_body)
        coding = self.headers.get("content-encoding", "").lower()
        plain = coding in ("", "identity")
        self._decode: Callable[[bytes], bytes] | None = None if plain else Decoded(coding, max_body)

    async def read(self) -> bytes:
        data = await self._body.read()
        return self._decode(data) if self._decode is not None else data

    def __aiter__(self) -> Response:
        return self

    async def __anext__(self) -> bytes:
        piece = await self._body.next()
        if not piece:
            raise StopAsyncIteration
        return self._decode(piece) if self._decode is not None else piece

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._keep and self._body.done:
            self._pool.give(self._origin, conn)
        else:
            conn.close()


class HttpPool:
    """Keep-alive connections per host and port, for POSTs; ``opened`` counts the connections made."""

    def __init__(self, *, max_idle: int = MAX_IDLE, max_body: int = MAX_BODY_BYTES) -> None:
        self.max_idle = max_idle
        self.max_body = max_body
        self.opened = 0
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def post(self, url: Url, headers: Mapping[str, str], body: bytes) -> Response:
        """POST ``body`` and read the reply's head, following 307 and 308 redirects (the credentials
        go no further than the host they were given for)."""
        for _ in range(MAX_REDIRECTS):
            reply = await self._send(url, headers, body)
            where = reply.headers.get("location") if reply.status in (307, 308) else None
            if not where:
                return reply
            await reply.aclose()
            moved = Url.parse(urljoin(url.text, where))
            if moved.origin != url.origin:
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            url = moved
        return await self._send(url, headers, body)

    async def _send(self, url: Url, headers: Mapping[str, str], body: bytes) -> Response:
        lines = [f"POST {url.target} HTTP/1.1", f"Host: {url.authority}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        lines.append(f"Content-Length: {len(body)}\r\n\r\n")
        request = "\r\n".join(lines).encode() + body
        conn = self._take(url.origin)
        if conn is not None:
            try:
                return await self._exchange(conn, url, request)
            except _Stale:
                pass  # closed while it lay idle: once more, on a new connection
        conn = await self._connect(url)
        try:
            return await self._exchange(conn, url, request)
        except _Stale as stale:
            raise HttpError(f"{url.authority} closed the connection without replying") from stale.__cause__

    async def _exchange(self, conn: _Connection, url: Url, request: bytes) -> Response:
        try:
            conn.writer.write(request)
            await conn.writer.drain()
            head = await conn.reader.readuntil(b"\r\n\r\n")
            while head.startswith((b"HTTP/1.1 100", b"HTTP/1.1 103")):  # interim: the reply follows
                head = await conn.reader.readuntil(b"\r\n\r\n")
            return Response(self, url.origin, conn, head, self.max_body)
        except asyncio.IncompleteReadError as error:
            conn.close()
            if not error.partial:
                raise _Stale from ConnectionResetError("the connection closed before the reply")
            raise HttpError(_garbled(error.partial)) from None
        except asyncio.LimitOverrunError:
            conn.close()
            raise HttpError(f"the reply's head is over {MAX_HEAD_BYTES} bytes") from None
        except ConnectionError as error:
            conn.close()
            if conn.reused:
                raise _Stale from error
            raise HttpError(f"the connection to {url.authority} failed") from error
        except OSError as error:
            conn.close()
            raise HttpError(f"the connection to {url.authority} failed") from error
        except BaseException:  # cancelled (a timeout), or a reply we refuse: the connection is spent
            conn.close()
            raise

    async def _connect(self, url: Url) -> _Connection:
        tls = tls_context() if url.scheme == "https" else None
        try:
            reader, writer = await asyncio.open_connection(
                url.host, url.port, ssl=tls, server_hostname=url.host if tls else None, limit=MAX_HEAD_BYTES
            )
        except OSError as error:
            raise HttpError(f"could not connect to {url.authority}") from error
        self.opened += 1
        return _Connection(reader, writer)

    def _take(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            if conn.alive(now):
                conn.reused = True
                return conn
            conn.close()
        return None

    def give(self, origin: tuple[str, str, int], conn: _Connection) -> None:
        """Keep a connection whose reply was read in full for the next request, if there is room."""
        idle = self._idle.setdefault(origin, [])
        if self._closed or len(idle) >= self.max_idle:
            conn.close()
            return
        conn.idle_since = asyncio.get_running_loop().time()
        idle.append(conn)

    @property
    def idle(self) -> int:
        """Connections waiting in the pool now."""
        return sum(len(conns) for conns in self._idle.values())

    async def aclose(self) -> None:
        """Close the idle connections; those in use close when their replies are done."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
