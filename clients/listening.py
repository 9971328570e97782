"""Where a local HTTP server of this package listens (``machine serve --http``, ``machine dashboard``):
loopback unless told otherwise, a socket bound before the server starts (so an address in use is refused
in words), and the bearer token a listener off loopback needs, chosen by the person or made once."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any

from machine.errors import BadInputError, Fix

MIN_CHOSEN_TOKEN = 32
"""The fewest characters a bearer token the person chooses may have."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def shown_host(host: str) -> str:
    """``host`` as it is written in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def token_from_env(env: str, echo: Callable[[str], None]) -> str:
    """The token in ``env``, else a new one announced once through ``echo`` (stderr)."""
    token = os.environ.get(env, "").strip()
    if token:
        if len(token) < MIN_CHOSEN_TOKEN:
            raise BadInputError(
                f"{env} is too short to be a safe bearer token ({len(token)} characters): use at least "
                f"{MIN_CHOSEN_TOKEN}, e.g. from "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return token
    from .tool_server import new_token

    fresh: str = new_token()
    echo(
        f"bearer token for this server (shown once; set {env} to choose your own):\n"
        f"  {fresh}\n"
        f'clients send it as the header "Authorization: Bearer <token>"'
    )
    return fresh


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for the server to listen on; an address in use or not of this
    machine is refused in words (``BadInputError``), with the option that gets past it."""
    shown = f"{shown_host(host)}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        raise BadInputError(
            f"host {host} is not an address of this machine ({error.strerror})",
            fixes=[Fix("host", "ADDRESS", "(one of this machine)")],
        ) from None
    listening = socket.socket(family, kind, proto)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
    except OSError as error:
        listening.close()
        if error.errno == errno.EADDRINUSE:
            raise BadInputError(
                f"{shown} is already in use (another server listens there)",
                fixes=[Fix("port", "PORT", "(a free one)"), Fix("port", "0", "to pick one")],
            ) from None
        raise BadInputError(
            f"cannot listen on {shown} ({error.strerror or error})",
            fixes=[Fix("host", "ADDRESS", "(one of this machine)"), Fix("port", "PORT", "(one you may use)")],
        ) from None
    listening.set_inheritable(False)
    return listening


async def serve_app(
    app: Any,
    listening: socket.socket,
    *,
    host: str,
    path: str = "",
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the ASGI ``app`` with uvicorn on the bound socket until cancelled; ``on_ready(url)`` once it
    accepts connections (``url``: where it listens, ``path`` appended)."""
    import anyio
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve, [listening])
        with anyio.fail_after(30):
            while not web.started:
                if web.should_exit:
                    return
                await anyio.sleep(0.01)
        port = web.servers[0].sockets[0].getsockname()[1]
        if on_ready is not None:
            on_ready(f"http://{shown_host(host)}:{port}{path}")


__all__ = ["MIN_CHOSEN_TOKEN", "bind", "is_loopback", "serve_app", "shown_host", "token_from_env"]
