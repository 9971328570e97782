"""What web_fetch returns and its limits, apart from the fetching: the tool is defined (and a machine
with it loaded) without importing the HTTP client, which loads on the first fetch."""

from __future__ import annotations

from dataclasses import dataclass

FETCH_TIMEOUT_S = 15.0
FETCH_MAX_BYTES = 5_000_000
MAX_REDIRECTS = 5


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
    text_cut: bool = False
    """Whether turning the HTML into text stopped early (at its time or size limit)."""
