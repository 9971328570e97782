"""web_fetch: a page from the web, read in the machine's process, never from the machine's own networks.

The address policy is checked by the code that opens each connection, on the address it connects to."""

from __future__ import annotations

import codecs
import ipaddress
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.to_thread
import httpcore
import httpx

from machine._errors import MachineError
from machine._tools import Tool, ToolFailure, tool

from ._paths import SNIFF_BYTES, _is_binary
from .html import html_to_text

FETCH_TIMEOUT_S = 15.0
FETCH_CHARS = 20_000
FETCH_MAX_BYTES = 5_000_000
MAX_REDIRECTS = 5


# ---------------------------------------------------------------------------- web: the address policy

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REFUSED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network", 0.0.0.0 among it
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, the cloud metadata service at 169.254.169.254 among it
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relays (deprecated)
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, the broadcast address among it
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_REFUSED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "2001::/23",  # IETF protocol assignments, Teredo (2001::/32) among them
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4: the packet really goes to the IPv4 address inside
        "3fff::/20",  # documentation
    )
)


def is_public_address(address: IPAddress | str) -> bool:
    """Whether web_fetch may connect to ``address``: a public unicast address, never loopback,
    private, link-local, carrier-grade NAT, multicast, reserved, unspecified or documentation.

    IPv6 must be global unicast (2000::/3), which leaves out unique-local fc00::/7, link-local
    fe80::/10 and multicast; IPv4-mapped addresses (::ffff:a.b.c.d) and the NAT64 prefix
    64:ff9b::/96 are judged by the IPv4 address inside; the tunnelling prefixes Teredo and 6to4
    are refused outright, since their real destination is an IPv4 address hidden inside."""
    if isinstance(address, str):
        try:
            address = ipaddress.ip_address(address)
        except ValueError:
            return False
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        if address in _NAT64:
            return is_public_address(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.scope_id or address not in _GLOBAL_UNICAST_V6:
            return False
        if any(address in network for network in _REFUSED_V6):
            return False
    elif any(address in network for network in _REFUSED_V4):
        return False
    # The standard library's view as well: a later Python that knows more special ranges only refuses more.
    return address.is_global and not (
        address.is_multicast
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_unspecified
    )


def public_only(address: IPAddress, port: int) -> bool:
    """The default policy of web_fetch: any port, public addresses only."""
    return is_public_address(address)


_INTERNAL_SUFFIXES = ("localhost", "local", "localdomain", "internal", "intranet", "lan", "home", "corp")


def _internal_name(host: str) -> bool:
    """A name that only means something inside a private network: localhost, mDNS (.local),
    .internal (cloud metadata), home.arpa and the like, or a single label that the resolver would
    complete with the machine's search domains."""
    name = host.rstrip(".").lower()
    if "." not in name:
        return True
    return name == "home.arpa" or name.endswith(".home.arpa") or name.rsplit(".", 1)[-1] in _INTERNAL_SUFFIXES


Resolver = Callable[[str], Awaitable[Sequence[str]]]
"""Host name -> the IP addresses it resolves to (as text)."""
Policy = Callable[[IPAddress, int], bool]
"""(address, port) -> whether web_fetch may connect there."""


async def resolve_host(host: str) -> list[str]:
    """The system resolver (getaddrinfo), each address once, in the order given."""
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class FetchError(MachineError):
    """A page that could not be fetched: the message says why, and names the URL."""


class FetchRefused(FetchError):
    """A URL, name or address web_fetch will not connect to."""


def _literal(host: str) -> list[IPAddress] | None:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        return None


async def _vetted(host: str, port: int, resolve: Resolver, allow: Policy) -> list[IPAddress]:
    """Resolve ``host`` once and check every address it has; one refused address refuses the host,
    so that a name resolving to a public and a private address cannot win by retrying."""
    addresses = _literal(host)
    if addresses is None:
        if _internal_name(host):
            raise FetchRefused(f"{host} is an internal name; web_fetch reads public sites only")
        try:
            addresses = [ipaddress.ip_address(a) for a in await resolve(host)]
        except (OSError, ValueError) as error:
            raise FetchError(f"could not resolve {host}: {error}") from None
        if not addresses:
            raise FetchError(f"could not resolve {host}: it has no address")
    for address in addresses:
        if not allow(address, port):
            named = "" if str(address) == host else f" ({host} resolves to it)"
            raise FetchRefused(
                f"{address}{named} is a private, loopback, link-local or otherwise non-public address; "
                "web_fetch reads public sites only"
            )
    return addresses


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
        addresses = await _vetted(host, port, self._resolve, self._allow)
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


class _GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore pool that uses the guarded backend. httpcore still sees
    the URL's host name, so the Host header, TLS SNI and certificate checks are those of the name."""

    def __init__(self, resolve: Resolver, allow: Policy) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            network_backend=_GuardedBackend(resolve, allow),
            http1=True,
            http2=False,
            retries=0,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
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
        await self._pool.aclose()


@dataclass(frozen=True)
class Page:
    """A fetched page, as text."""

    url: str
    """The URL asked for."""
    final_url: str
    """The URL the text came from, after redirects."""
    status: int
    content_type: str
    text: str
    title: str = ""
    redirects: tuple[str, ...] = ()
    cut: bool = False
    """Whether the body was longer than the download limit and only its start was read."""


_REDIRECTS = {301, 302, 303, 307, 308}
_TEXT_TYPES = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/rss+xml",
    "application/atom+xml",
}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}


def _url(raw: str) -> httpx.URL:
    text = raw.strip()
    if "://" not in text and re.match(r"^[\w.-]+\.[a-zA-Z]{2,}(:\d+)?(/|$)", text):
        text = "https://" + text  # 'example.com/page' means the site, not a relative path
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise FetchError(f"{raw!r} is not a usable URL: {error}") from None
    if url.scheme not in ("http", "https"):
        raise FetchRefused(
            f"{raw!r} uses {'the ' + url.scheme + ':' if url.scheme else 'no'} scheme; "
            "web_fetch reads http and https URLs only"
        )
    if not url.host:
        raise FetchError(f"{raw!r} has no host name")
    return url


def _kind(media: str, head: bytes) -> Literal["html", "text"] | None:
    if media in _HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml")):
        return "text"
    if media in ("", "application/octet-stream") and not _is_binary(head):
        start = head.lstrip()[:64].lower()
        return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"
    return None


def _charset(declared: str | None, head: bytes) -> str:
    candidates = [declared]
    found = re.search(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", head[:4096], re.IGNORECASE)
    if found:
        candidates.append(found.group(1).decode("ascii", errors="replace"))
    for name in candidates:
        if name:
            try:
                return codecs.lookup(name).name
            except LookupError:
                continue
    return "utf-8"


async def _read_body(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


async def fetch(
    url: str,
    *,
    resolve: Resolver = resolve_host,
    allow: Policy = public_only,
    timeout_s: float = FETCH_TIMEOUT_S,
    max_redirects: int = MAX_REDIRECTS,
    max_bytes: int = FETCH_MAX_BYTES,
) -> Page:
    """Fetch ``url`` as text, following up to ``max_redirects`` redirects, all within ``timeout_s``.

    Only http and https. Every connection is opened by a network backend that resolves the host once
    with ``resolve``, refuses internal names, checks EVERY address with ``allow`` and then connects to
    a checked address, so a name cannot resolve to one address when checked and another when used.
    Only the TCP connect is pinned: httpcore still works with the URL's name, so the Host header, TLS
    SNI and certificate verification are those of the name, as without the guard.
    Redirects are followed here, one request at a time, so each hop goes through the same check.
    Environment proxies are ignored (a proxy would make the checked address the proxy's).
    Raises FetchRefused for a URL or address the policy refuses and FetchError for other failures."""
    current = _url(url)
    redirects: list[str] = []
    transport = _GuardedTransport(resolve, allow)
    headers = {
        "User-Agent": "machine-web-fetch/0.1",
        "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
    }
    try:
        with anyio.fail_after(timeout_s):
            async with httpx.AsyncClient(
                transport=transport,
                trust_env=False,
                follow_redirects=False,
                timeout=timeout_s,
                headers=headers,
            ) as client:
                for _ in range(max_redirects + 1):
                    async with client.stream("GET", current) as response:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location:
                            redirects.append(str(current))
                            current = _url(str(current.join(location)))
                            continue
                        return await _page(url, current, response, tuple(redirects), max_bytes)
                raise FetchError(f"{url} redirected more than {max_redirects} times; stopped at {current}")
    except TimeoutError:
        raise FetchError(f"fetching {current} timed out after {timeout_s:g} s") from None
    except (httpcore.TimeoutException, httpx.TimeoutException):
        raise FetchError(f"fetching {current} timed out") from None
    except FetchError:
        raise
    except (httpcore.ConnectError, httpx.ConnectError) as error:
        raise FetchError(f"could not connect to {current.host}: {error or 'connection failed'}") from None
    except (
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpx.HTTPError,
        httpx.InvalidURL,
        OSError,
    ) as error:
        raise FetchError(f"fetching {current} failed: {error or type(error).__name__}") from None


async def _page(
    asked: str, url: httpx.URL, response: httpx.Response, redirects: tuple[str, ...], max_bytes: int
) -> Page:
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ("", "application/octet-stream") and _kind(media, b"") is None:
        raise FetchError(f"{url} is {media}, not text: web_fetch reads HTML and text pages only")
    body, cut = await _read_body(response, max_bytes)
    kind = _kind(media, body[:SNIFF_BYTES])
    if kind is None:
        kind_shown = media or "no content type"
        raise FetchError(f"{url} is binary ({kind_shown}): web_fetch reads HTML and text pages only")
    charset = _charset(response.charset_encoding, body if kind == "html" else b"")
    decoded = body.decode(charset, errors="replace")
    title = ""
    if kind == "html":
        title, decoded = html_to_text(decoded, base=str(url))
    return Page(
        url=asked,
        final_url=str(url),
        status=response.status_code,
        content_type=media or "unknown",
        text=decoded,
        title=title,
        redirects=redirects,
        cut=cut,
    )


def _render(page: Page, offset: int, limit: int = FETCH_CHARS) -> str:
    total = len(page.text)
    if offset > 0 and offset >= total:
        raise ToolFailure(
            f"offset {offset} is past the end: the text of {page.final_url} has {total:,} characters"
        )
    end = min(total, offset + limit)
    head = [f"URL: {page.final_url}"]
    if page.redirects:
        head.append(f"(redirected from {page.redirects[0]})")
    head.append(f"Status: {page.status}")
    if page.title:
        head.append(f"Title: {page.title}")
    head.append(f"Characters {offset:,}-{end:,} of {total:,} ({page.content_type})")
    parts = ["\n".join(head), "", page.text[offset:end] or "(the page has no text)"]
    if end < total:
        parts += ["", f"[{total - end:,} more characters: call web_fetch with offset={end} to read on]"]
    if page.cut:
        parts += ["", f"[the page is larger than {FETCH_MAX_BYTES:,} bytes: only its start was read]"]
    return "\n".join(parts)


def make_web_fetch(*, resolve: Resolver = resolve_host, allow: Policy = public_only) -> Tool:
    """A web_fetch tool with its own resolver and address policy (tests use a local server this way);
    the module's ``web_fetch`` uses the system resolver and public addresses only."""

    async def web_fetch(url: str, offset: int = 0) -> str:
        """Fetch a web page (http or https) and return its text: HTML becomes text with scripts and
        styles removed, headings marked with '#' and links written [text](url); other text types come
        as they are; binary files are refused. At most 20,000 characters a call: a longer page ends
        with the offset to pass to read on. Private, loopback (localhost), link-local and internal
        addresses are refused, on redirects too.

        url: the full address, e.g. 'https://example.com/page'.
        offset: the character to start from (0 for the beginning)."""
        if offset < 0:
            raise ToolFailure(f"offset must be 0 or more, not {offset}")
        try:
            page = await fetch(url, resolve=resolve, allow=allow)
        except FetchError as error:
            raise ToolFailure(str(error)) from None
        return _render(page, offset)

    built: Tool = tool(web_fetch)
    return built


web_fetch: Tool = make_web_fetch()
