"""An httpx transport whose every TCP connection goes to an address the policy has checked.

The check is made by the code that opens each connection, on the address it connects to; TLS and the
Host header still use the URL's name.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio.to_thread
import httpcore
import httpx

from ._address import FetchRefused, Policy, Resolver, vetted

_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


async def ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once per certificate setting and in a worker thread: loading
    the certificate store takes long enough to stall the event loop."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if key not in _CONTEXTS:
        _CONTEXTS[key] = await anyio.to_thread.run_sync(httpx.create_ssl_context)
    return _CONTEXTS[key]


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the address policy in front: every TCP connection is opened
    to an address that was resolved once and checked, never to a name that is resolved again."""

    def __init__(self, resolve: Resolver, allow: Policy) -> None:
        self._resolve = resolve
        self._allow = allow
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await vetted(host, port, self._resolve, self._allow)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise FetchRefused("web_fetch does not connect to local sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class _CoreStream(httpx.AsyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_stream():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore pool that uses the guarded backend. httpcore still sees
    the URL's host name, so the Host header, TLS SNI and certificate checks are those of the name."""

    def __init__(self, resolve: Resolver, allow: Policy, context: ssl.SSLContext | None = None) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context or httpx.create_ssl_context(),
            network_backend=_GuardedBackend(resolve, allow),
            http1=True,
            http2=False,
            retries=0,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the guarded pool; the body is streamed as it comes."""
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CoreStream(response),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self._pool.aclose()
