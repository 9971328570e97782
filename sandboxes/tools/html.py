"""HTML to readable text: scripts and styles dropped, headings, links, lists and code kept.

Linear in the page: every piece of text is joined into a link at most once (an ``<a>`` inside an open
one closes it first, as browsers do), list indents stop deepening at MAX_INDENT, and the text stops
growing at ``max_chars``. The HTML is fed in pieces so a Deadline can stop the work between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

from ._bounded import Deadline

MAX_INDENT = 8
"""List levels past this are indented no further: the indent of an item cannot grow with the page."""
MAX_TEXT_CHARS = 20_000_000
FEED_CHARS = 64 * 1024

# ---------------------------------------------------------------------------------------- HTML to text

_SKIPPED = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "details", "dialog", "div", "dl", "dt", "dd",
    "fieldset", "figcaption", "figure", "footer", "form", "header", "main", "nav", "ol", "p",
    "section", "summary", "table", "ul", "caption",
}  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


@dataclass
class _Link:
    href: str
    start: int


class _TextMaker(HTMLParser):
    def __init__(self, base: str, max_chars: int = MAX_TEXT_CHARS) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.max_chars = max_chars
        self.size = 0
        self.full = False
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.skipping: list[str] = []
        self.links: list[_Link] = []
        self.pre = 0
        self.lists = 0
        self.in_title = False

    def _ending(self) -> str:
        """The last two characters of the text so far, without copying any long part."""
        tail = ""
        for part in reversed(self.parts[-3:]):
            tail = part[-2:] + tail
            if len(tail) >= 2:
                break
        return tail[-2:]

    def _add(self, text: str) -> None:
        if self.size + len(text) > self.max_chars:
            self.full = True
            return
        self.parts.append(text)
        self.size += len(text)

    def _break(self, lines: int) -> None:
        ending = self._ending()
        if not self.parts:
            return
        have = len(ending) - len(ending.rstrip("\n"))
        if have < lines:
            self._add("\n" * (lines - have))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping.append(tag)
            return
        if self.skipping:
            return
        if tag == "title":
            self.in_title = True
        elif tag in _HEADINGS:
            self._break(2)
            self._add("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            self._add("  " * min(max(self.lists - 1, 0), MAX_INDENT) + "- ")
        elif tag in ("ul", "ol"):
            self.lists += 1
            self._break(1 if self.lists > 1 else 2)
        elif tag == "pre":
            self._break(2)
            self._add("```\n")
            self.pre += 1
        elif tag == "br":
            self._add("\n")
        elif tag == "hr":
            self._break(2)
            self._add("---")
            self._break(2)
        elif tag == "tr":
            self._break(1)
        elif tag in ("td", "th"):
            if not self._ending().endswith("\n") and self.parts:
                self._add(" | ")
        elif tag in _BLOCKS:
            self._break(2 if tag == "p" else 1)
        elif tag == "a":
            while self.links:  # links do not nest: a new one ends the open one
                self._close_link(self.links.pop())
            href = dict(attrs).get("href") or ""
            self.links.append(_Link(href, len(self.parts)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._add(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            return
        if tag == "title":
            self.in_title = False
        elif tag in _HEADINGS or tag == "p":
            self._break(2)
        elif tag in ("ul", "ol"):
            self.lists = max(self.lists - 1, 0)
            self._break(2 if self.lists == 0 else 1)
        elif tag == "pre":
            self.pre = max(self.pre - 1, 0)
            self._break(1)
            self._add("```")
            self._break(2)
        elif tag in _BLOCKS or tag in ("li", "tr"):
            self._break(1)
        elif tag == "a" and self.links:
            self._close_link(self.links.pop())

    def _close_link(self, link: _Link) -> None:
        joined = "".join(self.parts[link.start :])
        text = " ".join(joined.split())
        href = link.href.strip()
        if not text or not href or href.startswith(("#", "javascript:")):
            return
        try:
            target = urljoin(self.base, href) if self.base else href
        except ValueError:
            target = href
        replaced = f"[{text}]({target})"
        if self.size + len(replaced) - len(joined) > self.max_chars:
            self.full = True
            return
        self.parts[link.start :] = [replaced]
        self.size += len(replaced) - len(joined)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.skipping:
            return
        if self.pre:
            self._add(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._ending().endswith(("\n", " ")) or not self.parts:
            text = text.lstrip(" ")
        if text:
            self._add(text)


def convert(
    html: str, *, base: str = "", deadline: Deadline | None = None, max_chars: int = MAX_TEXT_CHARS
) -> tuple[str, str, bool]:
    """(title, text, cut) of an HTML page, fed FEED_CHARS at a time; ``cut`` says the text stopped at
    ``max_chars`` or the deadline passed before the end of the page."""
    maker = _TextMaker(base=base, max_chars=max_chars)
    cut = False
    for start in range(0, len(html), FEED_CHARS):
        if maker.full or (deadline is not None and deadline.expired()):
            cut = True
            break
        maker.feed(html[start : start + FEED_CHARS])
    maker.close()
    while maker.links:
        maker._close_link(maker.links.pop())
    text = "".join(maker.parts)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join("".join(maker.title_parts).split())
    return title, text, cut or maker.full


def html_to_text(html: str, *, base: str = "") -> tuple[str, str]:
    """(title, text) of an HTML page: scripts, styles and other non-text parts removed, headings as
    '#', list items as '-', preformatted blocks fenced, links as [text](absolute url)."""
    title, text, _ = convert(html, base=base)
    return title, text
