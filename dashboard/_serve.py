"""Serving the dashboard: the socket bound first (an address in use is refused in words), a token when it
listens off loopback, then uvicorn until stopped."""

from __future__ import annotations

from collections.abc import Callable

from machine.clients.listening import bind, is_loopback, serve_app, token_from_env
from machine.workspace import Workspace

from ._app import build_app

DEFAULT_PORT = 4242
TOKEN_ENV = "MACHINE_DASHBOARD_TOKEN"


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
    listening = bind(host, port)
    token = None if is_loopback(host) else token_from_env(TOKEN_ENV, say)
    if token is not None:
        say(f"warning: listening on {host}, reachable from other machines; the bearer token guards it")
    app = build_app(ws, host=host, token=token)
    await serve_app(app, listening, host=host, path="/", on_ready=on_ready)


__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "serve_dashboard"]
