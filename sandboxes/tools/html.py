"""HTML to readable text: scripts and styles dropped, headings, links, lists and code kept."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

import httpx

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
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.skipping: list[str] = []
        self.links: list[_Link] = []
        self.pre = 0
        self.lists = 0
        self.in_title = False

    def _ending(self) -> str:
        return "".join(self.parts[-3:])[-2:]

    def _break(self, lines: int) -> None:
        ending = self._ending()
        if not self.parts:
            return
        have = len(ending) - len(ending.rstrip("\n"))
        if have < lines:
            self.parts.append("\n" * (lines - have))

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
            self.parts.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            self.parts.append("  " * max(self.lists - 1, 0) + "- ")
        elif tag in ("ul", "ol"):
            self.lists += 1
            self._break(1 if self.lists > 1 else 2)
        elif tag == "pre":
            self._break(2)
            self.parts.append("```\n")
            self.pre += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "hr":
            self._break(2)
            self.parts.append("---")
            self._break(2)
        elif tag == "tr":
            self._break(1)
        elif tag in ("td", "th"):
            if not self._ending().endswith("\n") and self.parts:
                self.parts.append(" | ")
        elif tag in _BLOCKS:
            self._break(2 if tag == "p" else 1)
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            self.links.append(_Link(href, len(self.parts)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.parts.append(f"[image: {alt}]")

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
            self.parts.append("```")
            self._break(2)
        elif tag in _BLOCKS or tag in ("li", "tr"):
            self._break(1)
        elif tag == "a" and self.links:
            self._close_link(self.links.pop())

    def _close_link(self, link: _Link) -> None:
        text = " ".join("".join(self.parts[link.start :]).split())
        href = link.href.strip()
        if not text or not href or href.startswith(("#", "javascript:")):
            return
        try:
            target = str(httpx.URL(self.base).join(href)) if self.base else href
        except (httpx.InvalidURL, ValueError, TypeError):
            target = href
        self.parts[link.start :] = [f"[{text}]({target})"]

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.skipping:
            return
        if self.pre:
            self.parts.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._ending().endswith(("\n", " ")) or not self.parts:
            text = text.lstrip(" ")
        if text:
            self.parts.append(text)


def html_to_text(html: str, *, base: str = "") -> tuple[str, str]:
    """(title, text) of an HTML page: scripts, styles and other non-text parts removed, headings as
    '#', list items as '-', preformatted blocks fenced, links as [text](absolute url)."""
    maker = _TextMaker(base=base)
    maker.feed(html)
    maker.close()
    while maker.links:
        maker._close_link(maker.links.pop())
    text = "".join(maker.parts)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join("".join(maker.title_parts).split())
    return title, text
