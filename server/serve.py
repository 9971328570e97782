"""Running the server: stdio (stdout carries only protocol messages, logs go to stderr) or streamable HTTP
behind a bearer token, with DNS-rebinding protection (bad Host -> 421, bad Origin -> 403). The HTTP parts
are imported when used, so a stdio server starts on the SDK alone."""

from __future__ import annotations

import hmac
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.mcpserver import MCPServer

TOKEN_ENV = "MACHINE_SERVER_TOKEN"
DEFAULT_PORT = 8765
SCOPE = "machine"


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
    handler.setLevel(level)  # its own level: a client asking for the log at debug leaves it as it is
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def transport_security(host: str) -> Any:
    """DNS-rebinding protection for ``host``: only requests naming this server (and loopback) are served."""
    from machine.clients.listening import is_loopback, shown_host
    from machine.clients.tool_server import loopback_security

    settings = loopback_security()
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        shown = shown_host(host)
        settings.allowed_hosts += [shown, f"{shown}:*"]
        settings.allowed_origins += [f"http://{shown}:*", f"https://{shown}:*"]
    return settings


def warn_if_exposed(host: str, echo: Callable[[str], None]) -> None:
    """Say so when ``host`` is reachable from other machines."""
    from machine.clients.listening import is_loopback

    if not is_loopback(host):
        echo(f"warning: listening on {host}, reachable from other machines; the bearer token guards it")


def http_auth(token: str, host: str, port: int) -> tuple[Any, Any]:
    """The token verifier and auth settings for a server reached at ``host:port``."""
    from mcp.server.auth.settings import AuthSettings

    from machine.clients.listening import shown_host

    shown = shown_host(host)
    settings = AuthSettings(
        issuer_url=f"http://{shown}:{port or DEFAULT_PORT}",
        resource_server_url=None,
        required_scopes=[SCOPE],
    )
    return StaticTokenVerifier(token), settings


def token_from_env(echo: Callable[[str], None]) -> str:
    """``MACHINE_SERVER_TOKEN``, else a new token announced once through ``echo`` (stderr)."""
    from machine.clients.listening import token_from_env as chosen_or_new

    token: str = chosen_or_new(TOKEN_ENV, echo)
    return token


async def serve_http(
    server: MCPServer,
    *,
    host: str,
    port: int,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until cancelled.
    ``on_ready(url)`` is called once the socket is bound (port 0 picks a free one)."""
    from machine.clients.listening import bind, serve_app

    bound = bind(host, port)  # before the server starts, so an address in use is a clear error
    app = server.streamable_http_app(host=host, transport_security=transport_security(host))
    await serve_app(app, bound, host=host, path="/mcp", on_ready=on_ready)
