"""Fetching a page as text for web_fetch: redirects checked hop by hop, time and size capped.

Only HTML and text types are read; the body is decoded by its declared or sniffed charset.
"""

from __future__ import annotations

import codecs
import re
from functools import partial
from typing import Literal

import anyio
import anyio.lowlevel
import httpcore
import httpx

from ._address import FetchError, FetchRefused, Policy, Resolver, public_only, resolve_host
from ._bounded import Deadline, in_thread
from ._decode import ACCEPT_ENCODING, PIECE_BYTES, Decoder
from ._page import FETCH_MAX_BYTES, FETCH_TIMEOUT_S, MAX_REDIRECTS, Page
from ._paths import SNIFF_BYTES, _is_binary
from ._transport import GuardedTransport, ssl_context
from .html import convert

TEXT_SECONDS = 10.0
"""How long turning a page's HTML into text may take (off the event loop) before the text is cut."""
HEADERS = {
    "User-Agent": "machine-web-fetch/0.1",
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
    "Accept-Encoding": ACCEPT_ENCODING,
}
"""The headers every request of web_fetch sends."""


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
    """The body, decoded as it arrives, cut at ``max_bytes`` of decoded bytes and of raw bytes alike."""
    decoder = Decoder(response.headers.get("content-encoding", ""))
    body = bytearray()
    raw = 0
    async for chunk in response.aiter_raw():
        raw += len(chunk)
        decoder.push(chunk)
        while piece := decoder.pull(min(PIECE_BYTES, max_bytes + 1 - len(body))):
            body += piece
            if len(body) > max_bytes:
                del body[max_bytes:]
                return bytes(body), True
            await anyio.lowlevel.checkpoint()  # a piece at a time: a bomb's inflating never holds the loop
        if raw > max_bytes:
            return bytes(body), True
    return bytes(body), False


def _as_text(body: bytes, charset: str, html: bool, base: str, deadline: Deadline) -> tuple[str, str, bool]:
    """(title, text, cut) of a body: run in a worker thread, since a page can be megabytes of HTML."""
    decoded = body.decode(charset, errors="replace")
    if not html:
        return "", decoded, False
    return convert(decoded, base=base, deadline=deadline)


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
    transport = GuardedTransport(resolve, allow, await ssl_context())
    try:
        with anyio.fail_after(timeout_s):
            async with httpx.AsyncClient(
                transport=transport,
                trust_env=False,
                follow_redirects=False,
                timeout=timeout_s,
                headers=HEADERS,
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
    work = partial(_as_text, body, charset, kind == "html", str(url))
    title, decoded, text_cut = await in_thread(work, TEXT_SECONDS)
    return Page(
        url=asked,
        final_url=str(url),
        status=response.status_code,
        content_type=media or "unknown",
        text=decoded,
        title=title,
        redirects=redirects,
        cut=cut,
        text_cut=text_cut,
    )
