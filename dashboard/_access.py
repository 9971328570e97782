"""Who may read the dashboard: every request's Host and Origin are parsed strictly and checked (a page
elsewhere cannot rebind a name to this server and read it), and a dashboard listening off loopback also
needs its bearer token, sent as ``Authorization: Bearer TOKEN`` by a script, or kept by a browser as a
cookie after one visit to ``/?token=TOKEN``, which redirects to a path of this server only. A change (any
method but GET and HEAD) needs more: the bearer token itself, or its page's own Origin and that page's
CSRF token (``_csrf``), so no other site, and no page of this one opened elsewhere, can make it. Tokens
are compared in constant time and never logged."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from machine.clients.listening import shown_host

from ._authority import Authority, parse_authority, parse_origin
from ._csrf import HEADER, PageTokens

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "machine_dashboard"
WILDCARDS = frozenset({"0.0.0.0", "::"})
READS = frozenset({"GET", "HEAD"})
"""The methods that change nothing; every other one is a change, guarded as one."""
PATH_SAFE = "/:@!$&'()*+,;=-._~"
"""What a redirect's path keeps as it is; anything else (a backslash, a space, a control) is escaped."""


class Guard:
    """ASGI middleware in front of the dashboard."""

    def __init__(self, app: App, *, host: str, token: str | None, pages: PageTokens) -> None:
        self.app = app
        self.pages = pages
        self.token = token.encode() if token else None
        self.any_host = host in WILDCARDS
        self.bound = parse_authority(shown_host(host))

    def _host_allowed(self, host: Authority) -> bool:
        """Loopback by any of its names, or the host this server was bound to (on every address: any)."""
        return self.any_host or host.is_loopback or (self.bound is not None and host.name == self.bound.name)

    def _refusal(self, headers: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """Why the request's Host or Origin is refused, if it is: exactly one Host that parses (400), of
        this server (421); at most one Origin, and that one this very page's (403)."""
        hosts = [v.decode("latin-1") for k, v in headers if k.lower() == b"host"]
        host = parse_authority(hosts[0]) if len(hosts) == 1 else None
        if host is None:
            return 400, "a request needs one well-formed Host header"
        if not self._host_allowed(host):
            return 421, "this dashboard is not served under that host name"
        origins = [v.decode("latin-1") for k, v in headers if k.lower() == b"origin"]
        if not origins:
            return None
        origin = parse_origin(origins[0]) if len(origins) == 1 else None
        if origin is None or not origin[1].same_place(host, origin[0]):
            return 403, "requests from other sites are refused"
        return None

    def _has_bearer(self, headers: dict[str, str]) -> bool:
        bearer = headers.get("authorization", "")
        return (
            self.token is not None
            and bearer.lower().startswith("bearer ")
            and hmac.compare_digest(bearer[7:].strip().encode(), self.token)
        )

    def _has_token(self, headers: dict[str, str]) -> bool:
        assert self.token is not None
        if self._has_bearer(headers):
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
        refused = self._refusal(scope.get("headers", []))
        if refused is not None:
            await _refuse(send, *refused)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
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
        if scope.get("method", "GET") not in READS and not self._may_change(headers):
            await _refuse(
                send,
                403,
                "a change needs this dashboard's page: its own Origin and the page's CSRF token "
                "(reload the page), or the bearer token",
            )
            return
        await self.app(scope, receive, send)

    def _may_change(self, headers: dict[str, str]) -> bool:
        """A script with the bearer token, or a page of this dashboard: an Origin (already checked to be
        this server's) and a CSRF token this server made."""
        if self._has_bearer(headers):
            return True
        return "origin" in headers and self.pages.valid(headers.get(HEADER, ""))


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
    target = own_path(path) + (f"?{urlencode(query)}" if query else "")
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [(b"location", target.encode()), (b"set-cookie", cookie.encode()), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def own_path(path: str) -> str:
    """``path`` as a path on this server and nowhere else: one leading slash (``//evil.com`` would be
    another host) and every character a browser might read otherwise escaped (``/\\evil.com``, a tab)."""
    return "/" + quote(path.lstrip("/"), safe=PATH_SAFE)


__all__ = ["COOKIE", "Guard", "own_path"]
