"""The model proxy's HTTP/1.1 on the wire: one request a connection, read within bounds, and replies that
close their connection when they end (so a stream needs no framing)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from anyio.streams.buffered import BufferedByteReceiveStream

from machine.errors import UsageRefused

MAX_HEAD_BYTES = 64 * 1024
MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""A request's body: a long run's whole history and tools, far from what a host sends."""
MAX_STREAM_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024
"""One line of a streamed reply (one chunk of it)."""


class Refusal(Exception):
    """A request the proxy answers itself, with an OpenAI-style error the host can show."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


@dataclass
class Request:
    """A host's request as read: header names lower-cased, the body whole (bounded)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


async def lines(reply: httpx.Response) -> AsyncIterator[bytes]:
    """A streamed reply's lines, each with its newline, bounded in length and in total."""
    pending, total = bytearray(), 0
    async for chunk in reply.aiter_bytes():
        total += len(chunk)
        if total > MAX_STREAM_BYTES:
            raise UsageRefused(f"the streamed reply was longer than {MAX_STREAM_BYTES} bytes")
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            yield bytes(pending[: end + 1])
            del pending[: end + 1]
        if len(pending) > MAX_LINE_BYTES:
            raise UsageRefused(f"the streamed reply had a line longer than {MAX_LINE_BYTES} bytes")
    if pending:
        yield bytes(pending)


async def read_capped(reply: httpx.Response, limit: int) -> bytes:
    """A reply's body, failing the call past ``limit`` bytes (memory stays within it)."""
    body = bytearray()
    async for chunk in reply.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise UsageRefused(f"the endpoint's reply was longer than {limit} bytes")
    return bytes(body)


async def read_request(reader: BufferedByteReceiveStream) -> Request:
    head = (await reader.receive_until(b"\r\n\r\n", MAX_HEAD_BYTES)).decode("latin-1")
    first, *lines = head.split("\r\n")
    parts = first.split(" ")
    if len(parts) != 3:
        raise Refusal(400, "a malformed request line")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise Refusal(411, "a request body must have a Content-Length")
    try:
        length = int(headers.get("content-length") or 0)
    except ValueError:
        raise Refusal(400, "a malformed Content-Length") from None
    if not 0 <= length <= MAX_REQUEST_BYTES:
        raise Refusal(413, f"a request body is at most {MAX_REQUEST_BYTES} bytes")
    body = await reader.receive_exactly(length) if length else b""
    return Request(parts[0].upper(), parts[1], headers, body)


def kept_headers(reply: httpx.Response) -> dict[str, str]:
    """The upstream reply's headers the host may need: its type and how long to wait before a retry."""
    kept = {"content-type": reply.headers.get("content-type", "application/json")}
    if "retry-after" in reply.headers:
        kept["retry-after"] = reply.headers["retry-after"]
    return kept


def head(status: int, headers: dict[str, str], length: int | None = None) -> bytes:
    """A reply's head; every reply closes its connection (a stream ends when it closes)."""
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if length is not None:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def error_reply(status: int, message: str, kind: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()
    return head(status, {"content-type": "application/json"}, len(body)) + body


def event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()
