"""Serving the dashboard: the socket bound first (an address in use is refused in words), a token when it
listens off loopback, the cap on event streams, then uvicorn until stopped."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from machine.clients.listening import bind, is_loopback, serve_app, token_from_env
from machine.errors import BadInputError
from machine.workspace import Workspace

from ._app import build_app
from ._events import MAX_STREAMS

DEFAULT_PORT = 4242
TOKEN_ENV = "MACHINE_DASHBOARD_TOKEN"
STREAMS_ENV = "MACHINE_DASHBOARD_STREAMS"
MOST_STREAMS = 10_000


def streams_from_env() -> int:
    """``MACHINE_DASHBOARD_STREAMS`` (event streams open at once), else ``MAX_STREAMS``; checked before
    the server starts, so a typo is said in words rather than serving with no cap."""
    text = os.environ.get(STREAMS_ENV, "").strip()
    if not text:
        return MAX_STREAMS
    if not re.fullmatch(r"[0-9]{1,6}", text) or not 1 <= int(text) <= MOST_STREAMS:
        raise BadInputError(
            f"{STREAMS_ENV} must be a whole number from 1 to {MOST_STREAMS:,} (the event streams open at "
            f"once; {MAX_STREAMS} when unset), not {text!r}"
        )
    return int(text)


async def serve_dashboard(
    ws: Workspace,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    say: Callable[[str], None] = print,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``ws``'s dashboard at ``http://host:port/`` until cancelled. Off loopback a bearer token
    guards it: ``MACHINE_DASHBOARD_TOKEN``, else a new one told through ``say`` once."""
    streams = streams_from_env()
    listening = bind(host, port)
    token = None if is_loopback(host) else token_from_env(TOKEN_ENV, say)
    if token is not None:
        say(f"warning: listening on {host}, reachable from other machines; the bearer token guards it")
    app = build_app(ws, host=host, token=token, max_streams=streams)
    await serve_app(app, listening, host=host, path="/", on_ready=on_ready)


__all__ = ["DEFAULT_PORT", "STREAMS_ENV", "TOKEN_ENV", "serve_dashboard", "streams_from_env"]
