"""A store's location as it may be shown: a PostgreSQL password never printed, in any form libpq reads it
from. ``mask_passwords`` is the one function every face and message uses to name a store (and the CLI
runs over every error line as a last guard): a URL's userinfo (``postgresql://bob:***@host/db``), a
``password=`` in a URL's query (its name percent-encoded or not, as libpq decodes it), and a
``password=...`` pair of a key=value connection string (``host=db password=*** dbname=runs``), a
quoted value with its escapes included."""

from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
CONNINFO_KEYWORDS = ("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service")
"""A location that starts ``KEYWORD=`` with one of these is a libpq key=value connection string."""

_URL = (
    r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]{0,30}://"
    r"(?:[^\s/?#@:\"'<>]*:[^\n/<>]*@)?"  # a user and a password, which may hold spaces up to the '@'
    r"[^\s\"'<>]*)"
)
_PAIR = (
    r"(?P<key>(?<![\w.%-])(?i:password)[ \t]*=[ \t]*)"
    r"(?P<value>'(?:\\.|[^'\\\n])*'?|(?:\\.|[^\s'\\])+)"
)
_PATTERN = re.compile(f"{_URL}|{_PAIR}")
_QUERY_PAIR = re.compile(r"(?<=[?&])(?P<key>[^=&]*)=(?P<value>[^&]*)")
_CONNINFO = re.compile(rf"\s*(?:{'|'.join(CONNINFO_KEYWORDS)})\s*=")


def is_conninfo(location: str) -> bool:
    """Whether ``location`` is a libpq key=value connection string (``host=db dbname=runs``)."""
    return _CONNINFO.match(location) is not None


def mask_passwords(text: str) -> str:
    """``text`` with every password a PostgreSQL location in it holds shown as ``***``; the user, host,
    port, database and other settings stay readable. Text with no password comes back as it was."""
    return _PATTERN.sub(_masked, text)


def _masked(m: re.Match[str]) -> str:
    if m["url"] is None:
        return f"{m['key']}{HIDDEN}"
    scheme, _, rest = m["url"].partition("://")
    netloc, slash, tail = rest.partition("/")  # libpq reads the userinfo up to the first '/'
    userinfo, at, host = netloc.rpartition("@")  # and urllib up to the last '@': mask what either reads
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:{HIDDEN}@{host}"
    return _QUERY_PAIR.sub(_query_pair, f"{scheme}://{netloc}{slash}{tail}")


def _query_pair(m: re.Match[str]) -> str:
    if unquote(m["key"]).strip().lower() != "password":
        return m.group(0)
    return f"{m['key']}={HIDDEN}"


__all__ = ["is_conninfo", "mask_passwords"]
