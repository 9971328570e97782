"""Per-page tokens for the dashboard's writes. Each time the page is served it carries a fresh token (a
``<meta>`` the page's script sends back as ``X-Machine-CSRF`` on every change): a nonce, the time it was
made, and an HMAC of both under a key this server made at start. The server keeps nothing per page, a
token from another server or an earlier run of this one is refused (reload the page), and a token older
than ``TOKEN_LIFE_S`` is refused. Compared in constant time, never logged."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

HEADER = "x-machine-csrf"
"""The request header a change carries its page's token in."""
META = "machine-csrf"
"""The name of the page's ``<meta>`` that holds its token."""
TOKEN_LIFE_S = 24 * 3600


class PageTokens:
    """Makes and checks the per-page tokens of one running server."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._clock = clock

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def mint(self) -> str:
        """A new token for one page."""
        body = f"{int(self._clock())}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._mac(body)}"

    def valid(self, token: str) -> bool:
        """Whether ``token`` was made by this server and is not too old."""
        body, _, mac = token.rpartition(".")
        made, _, nonce = body.partition(".")
        if not (made.isdigit() and nonce and len(mac) == 64):
            return False
        if not hmac.compare_digest(mac.encode(), self._mac(body).encode()):
            return False
        return 0 <= self._clock() - int(made) <= TOKEN_LIFE_S


__all__ = ["HEADER", "META", "TOKEN_LIFE_S", "PageTokens"]
