"""A loopback HTTP proxy that adds a bearer token to every request, for clients that cannot send one (the
MCP conformance suite sends no Authorization header; ``machine serve --http`` refuses a request without
it). Everything else passes through as sent, Host and Origin included, so the server's DNS-rebinding
protection still judges the client's own headers; replies, event streams included, are passed back as
they come."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import uvicorn

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"authorization"}
"""Headers the proxy does not pass on as they are: the body is re-sent whole (and a reply's re-framed by the
proxy's own server), the token added."""


class BearerProxy:
    """An ASGI app forwarding to ``upstream`` (``http://127.0.0.1:PORT``) with ``token``."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream, self.token = upstream, token
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.lower() not in HOP]
        headers.append(("authorization", f"Bearer {self.token}"))
        query = f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        request = self.client.build_request(
            scope["method"], self.upstream + scope["path"] + query, headers=headers, content=body
        )
        reply = await self.client.send(request, stream=True)
        try:
            passed = [
                (k.encode(), v.encode()) for k, v in reply.headers.items() if k.lower().encode() not in HOP
            ]
            await send({"type": "http.response.start", "status": reply.status_code, "headers": passed})
            with contextlib.suppress(httpx.ReadError):  # the server ended a stream it held open: so do we
                async for chunk in reply.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await reply.aclose()


@asynccontextmanager
async def bearer_proxy(upstream: str, token: str) -> AsyncIterator[str]:
    """The proxy serving on a free loopback port while the block runs; yields its base URL."""
    app = BearerProxy(upstream, token)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            await app.client.aclose()
