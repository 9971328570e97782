"""Who may read the dashboard: every request's Host and Origin are checked (a page elsewhere cannot rebind
a name to this server and read it), and a dashboard listening off loopback also needs its bearer token,
sent as ``Authorization: Bearer TOKEN`` by a script, or kept by a browser as a cookie after one visit to
``/?token=TOKEN``. Tokens are compared in constant time and never logged."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from machine.clients.listening import is_loopback, shown_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "machine_dashboard"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
WILDCARDS = frozenset({"0.0.0.0", "::"})


def _name(host_header: str) -> str:
    """The host name of a Host header or an origin's netloc, without its port."""
    if host_header.startswith("["):
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class Guard:
    """ASGI middleware in front of the dashboard."""

    def __init__(self, app: App, *, host: str, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.any_host = host in WILDCARDS
        self.hosts = LOOPBACK_NAMES | ({shown_host(host)} if not is_loopback(host) else set())

    def _host_allowed(self, name: str) -> bool:
        return self.any_host or name.lower() in self.hosts

    def _origin_allowed(self, origin: str) -> bool:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and self._host_allowed(_name(parts.netloc))

    def _has_token(self, headers: dict[str, str]) -> bool:
        assert self.token is not None
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer ") and hmac.compare_digest(
            bearer[7:].strip().encode(), self.token
        ):
            return True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self.token):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self._host_allowed(_name(headers.get("host", ""))):
            await _refuse(send, 421, "this dashboard is not served under that host name")
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            await _refuse(send, 403, "requests from other sites are refused")
            return
        if self.token is not None and not self._has_token(headers):
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            given = query.pop("token", "")
            if given and hmac.compare_digest(given.encode(), self.token):
                await _remember(send, scope["path"], query, given)
                return
            await _refuse(
                send, 401, "this dashboard needs its bearer token (Authorization: Bearer, or ?token=)"
            )
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, why: str) -> None:
    body = f'{{"error": "{why}"}}'.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _remember(send: Send, path: str, query: dict[str, str], token: str) -> None:
    """Keep the token as a cookie (this site only, not readable by scripts) and go to the page without it
    in the address, so it is not left in the history."""
    target = path + (f"?{urlencode(query)}" if query else "")
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [(b"location", target.encode()), (b"set-cookie", cookie.encode()), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


__all__ = ["COOKIE", "Guard"]
