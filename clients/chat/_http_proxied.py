"""Model calls through httpx where our pool cannot go: a proxy the environment names for the endpoint
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, less ``NO_PROXY``), or an event loop other than asyncio's.

httpx reads the same variables (and speaks CONNECT), so a proxied setup keeps working as it did with the
SDK; the pool is the fast path for everyone else.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ._http import HttpPool, Transport, Url
from ._http_stream import MAX_BODY_BYTES, HttpError, too_large


def proxy_for(url: Url) -> str | None:
    """The proxy the environment names for ``url``, or None (none named, or NO_PROXY lists the host)."""
    import urllib.request  # 15 ms of imports: only when a model is really called

    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


def transport_for(url: Url, timeout_s: float) -> Transport:
    """Our pool, unless a proxy is named for ``url`` or the loop is not asyncio's: then httpx."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # trio, say: the pool is on asyncio streams
        return Proxied(timeout_s)
    return Proxied(timeout_s) if proxy_for(url) else HttpPool()


def _failed(error: Exception) -> Exception:
    import httpx

    if isinstance(error, httpx.TimeoutException):
        return TimeoutError(str(error) or type(error).__name__)
    return HttpError("the request through httpx failed")


class ProxiedReply:
    """httpx's streamed response as our ``Reply``; its errors as ours."""

    def __init__(self, response: Any, max_body: int) -> None:
        self._response = response
        self._pieces: AsyncIterator[bytes] | None = None
        self._max_body = max_body
        self.status: int = response.status_code
        self.headers = {name.lower(): value for name, value in response.headers.items()}

    async def read(self) -> bytes:
        pieces, size = [], 0
        async for piece in self:
            size += len(piece)
            if size > self._max_body:
                raise too_large(size, self._max_body)
            pieces.append(piece)
        return b"".join(pieces)

    def __aiter__(self) -> ProxiedReply:
        return self

    async def __anext__(self) -> bytes:
        import httpx

        if self._pieces is None:
            self._pieces = self._response.aiter_bytes()
        try:
            return await self._pieces.__anext__()
        except httpx.HTTPError as error:
            raise _failed(error) from error

    async def aclose(self) -> None:
        await self._response.aclose()


class Proxied:
    """httpx's client with the environment's proxies (``trust_env``), redirects followed."""

    def __init__(self, timeout_s: float, max_body: int = MAX_BODY_BYTES) -> None:
        import httpx

        self.max_body = max_body
        self._client = httpx.AsyncClient(timeout=timeout_s, trust_env=True, follow_redirects=True)

    async def post(self, url: Url, headers: Mapping[str, str], body: bytes) -> ProxiedReply:
        import httpx

        request = self._client.build_request("POST", url.text, headers=dict(headers), content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as error:
            raise _failed(error) from error
        return ProxiedReply(response, self.max_body)

    async def aclose(self) -> None:
        await self._client.aclose()
