"""Running the server: stdio (stdout carries only protocol messages, logs go to stderr) or streamable HTTP
behind a bearer token, with DNS-rebinding protection (bad Host -> 421, bad Origin -> 403). The HTTP parts
are imported when used, so a stdio server starts on the SDK alone."""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from machine.errors import BadInputError, Fix

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.mcpserver import MCPServer

TOKEN_ENV = "MACHINE_SERVER_TOKEN"
DEFAULT_PORT = 8765
SCOPE = "machine"
MIN_TOKEN_CHARS = 32


class StaticTokenVerifier:
    """Accepts exactly one token, compared in constant time. The token is never logged."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="machine-serve", client_id="machine-serve-user", scopes=[SCOPE])
        return None

    def __repr__(self) -> str:
        return "StaticTokenVerifier(<token hidden>)"


def log_to_stderr(level: int = logging.WARNING) -> None:
    """Logs go to stderr only (stdout is the stdio transport)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str) -> Any:
    """DNS-rebinding protection for ``host``: only requests naming this server (and loopback) are served."""
    from machine.clients.tool_server import loopback_security

    settings = loopback_security()
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        shown = f"[{host}]" if ":" in host else host
        settings.allowed_hosts += [shown, f"{shown}:*"]
        settings.allowed_origins += [f"http://{shown}:*", f"https://{shown}:*"]
    return settings


def http_auth(token: str, host: str, port: int) -> tuple[Any, Any]:
    """The token verifier and auth settings for a server reached at ``host:port``."""
    from mcp.server.auth.settings import AuthSettings

    shown = f"[{host}]" if ":" in host else host
    settings = AuthSettings(
        issuer_url=f"http://{shown}:{port or DEFAULT_PORT}",
        resource_server_url=None,
        required_scopes=[SCOPE],
    )
    return StaticTokenVerifier(token), settings


def token_from_env(echo: Callable[[str], None]) -> str:
    """``MACHINE_SERVER_TOKEN``, else a new token announced once through ``echo`` (stderr)."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        if len(token) < MIN_TOKEN_CHARS:
            raise BadInputError(
                f"{TOKEN_ENV} is too short to be a safe bearer token ({len(token)} characters): use at least "
                f"{MIN_TOKEN_CHARS}, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return token
    from machine.clients.tool_server import new_token

    fresh: str = new_token()
    echo(
        f"bearer token for this server (shown once; set {TOKEN_ENV} to choose your own):\n"
        f"  {fresh}\n"
        f'clients send it as the header "Authorization: Bearer <token>"'
    )
    return fresh


async def serve_http(
    server: MCPServer,
    *,
    host: str,
    port: int,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until cancelled.
    ``on_ready(url)`` is called once the socket is bound (port 0 picks a free one)."""
    import anyio
    import uvicorn

    listening = bind(host, port)  # before the server starts, so an address in use is a clear error
    app = server.streamable_http_app(host=host, transport_security=transport_security(host))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve, [listening])
        with anyio.fail_after(30):
            while not web.started:
                if web.should_exit:
                    return
                await anyio.sleep(0.01)
        bound = web.servers[0].sockets[0].getsockname()
        shown = f"[{host}]" if ":" in host else host
        if on_ready is not None:
            on_ready(f"http://{shown}:{bound[1]}/mcp")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for the server to listen on; an address in use or not of this
    machine is refused in words (``BadInputError``), with the option that gets past it."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
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
