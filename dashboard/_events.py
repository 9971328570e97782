"""The event stream (``GET /api/events``): each open page's server-sent events, with a bounded number
open at once. Every stream holds a connection and a subscriber for as long as its page is open, and
3,000 of them slowed every endpoint to seconds; past ``MAX_STREAMS`` a new one is answered 503 with
Retry-After (the page tries again), and a slot is given back however its response ends: the page went
away, the server stops, or the stream failed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ._follow import Follower

MAX_STREAMS = 32
"""Event streams open at once (``MACHINE_DASHBOARD_STREAMS`` changes it): dozens of tabs, not thousands."""
RETRY_AFTER_S = 5
KEEP_ALIVE_S = 15.0
"""How often a quiet event stream sends a comment, so proxies and the browser keep it open."""


class Streams:
    """The event stream endpoint and its count of open streams (one event loop: no lock needed)."""

    def __init__(self, follower: Follower, limit: int = MAX_STREAMS) -> None:
        self.follower = follower
        self.limit = limit
        self.open = 0

    def _release(self) -> None:
        self.open -= 1

    async def endpoint(self, request: Request) -> Response:
        if self.open >= self.limit:
            why = f"{self.limit} event streams are open already, the most this dashboard serves: retry later"
            headers = {"retry-after": str(RETRY_AFTER_S), "cache-control": "no-store"}
            return JSONResponse({"error": why}, status_code=503, headers=headers)
        self.open += 1
        return _Held(self._release, _stream(self.follower, request))


class _Held(StreamingResponse):
    """A streaming response that gives its slot back once, however it ends."""

    def __init__(self, release: Callable[[], None], events: AsyncIterator[str]) -> None:
        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        super().__init__(events, media_type="text/event-stream", headers=headers)
        self._release: Callable[[], None] | None = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


async def _stream(follower: Follower, request: Request) -> AsyncIterator[str]:
    """One subscriber's events as server-sent events, until the page goes away."""
    send, receive = follower.subscribe()
    try:
        yield ": connected\n\n"
        while True:
            with anyio.move_on_after(KEEP_ALIVE_S) as waited:
                event = await receive.receive()
            if waited.cancelled_caught:
                if await request.is_disconnected():
                    return
                yield ": keep-alive\n\n"
                continue
            yield f"event: {event.get('kind', 'message')}\ndata: {json.dumps(event, default=str)}\n\n"
    finally:
        follower.unsubscribe(send)
        send.close()


__all__ = ["KEEP_ALIVE_S", "MAX_STREAMS", "RETRY_AFTER_S", "Streams"]
