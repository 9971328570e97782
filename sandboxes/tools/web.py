"""web_fetch: a page from the web, read in the machine's process, never from the machine's own networks.

This module is the tool and what callers import; the address policy, the guarded transport and the
fetching itself are in ``_address``, ``_transport`` and ``_fetch``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from machine.runs import Tool, ToolFailure, tool

from ._address import (
    FetchError,
    FetchRefused,
    IPAddress,
    Policy,
    Resolver,
    is_public_address,
    public_only,
    resolve_host,
)
from ._page import FETCH_MAX_BYTES, FETCH_TIMEOUT_S, MAX_REDIRECTS, Page

if TYPE_CHECKING:
    from ._fetch import fetch

FETCH_CHARS = 20_000


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
    if page.text_cut:
        parts += [
            "",
            "[the page's HTML was too large or too slow to turn into text: only its start is shown]",
        ]
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
        from ._fetch import fetch  # the HTTP client loads with the first fetch, not with the machine

        try:
            page = await fetch(url, resolve=resolve, allow=allow)
        except FetchError as error:
            raise ToolFailure(str(error)) from None
        return _render(page, offset)

    built: Tool = tool(web_fetch)
    return built


web_fetch: Tool = make_web_fetch()


def __getattr__(name: str) -> Any:
    if name == "fetch":
        from ._fetch import fetch

        return fetch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FETCH_CHARS",
    "FETCH_MAX_BYTES",
    "FETCH_TIMEOUT_S",
    "MAX_REDIRECTS",
    "FetchError",
    "FetchRefused",
    "IPAddress",
    "Page",
    "Policy",
    "Resolver",
    "fetch",
    "is_public_address",
    "make_web_fetch",
    "public_only",
    "resolve_host",
    "web_fetch",
]
