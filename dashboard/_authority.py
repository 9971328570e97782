"""Host and Origin headers read strictly: a name, an IPv4 address or a bracketed IPv6 address, then at
most a port (RFC 3986's authority without userinfo, RFC 7230's Host, RFC 6454's serialized origin), and
nothing else. Matching by prefix or by splitting at the last colon let ``127.0.0.1:1@evil.com`` pass for
loopback; here a value that does not parse whole is no host at all, and addresses are compared as
addresses (``ipaddress``), names as lower-case labels."""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
"""One label of a host name (underscores allowed, as some local names have them)."""
PORT = re.compile(r"[0-9]{1,5}")
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Authority:
    """A host and its port as a request named them; ``name`` is canonical (an address as ``ipaddress``
    writes it, a name in lower case), so equal hosts compare equal however they were written."""

    name: str
    address: IPv4Address | IPv6Address | None
    port: int | None

    @property
    def is_loopback(self) -> bool:
        return self.name == "localhost" or (self.address is not None and self.address.is_loopback)

    def same_place(self, other: Authority, scheme: str) -> bool:
        """Whether both name the same host and port, a missing port being ``scheme``'s own."""
        default = DEFAULT_PORTS[scheme]
        return self.name == other.name and (self.port or default) == (other.port or default)


def parse_authority(text: str) -> Authority | None:
    """``host[:port]`` or ``[ipv6][:port]``, else None (userinfo, a path, a zone, spaces, an empty or
    out-of-range port, a bare IPv6 address: all malformed)."""
    if text.startswith("["):
        inside, closed, rest = text[1:].partition("]")
        if not closed or "%" in inside:
            return None
        try:
            address: IPv4Address | IPv6Address | None = IPv6Address(inside)
        except ValueError:
            return None
        name = str(address)
    else:
        host, colon, port_text = text.partition(":")
        rest = colon + port_text
        name = host.lower()
        try:
            address = IPv4Address(name)
        except ValueError:
            address = None
            if len(name) > 253 or not all(LABEL.fullmatch(label) for label in name.split(".")):
                return None
    if not rest:
        return Authority(name, address, None)
    if rest[0] != ":" or not PORT.fullmatch(rest[1:]) or not 0 < int(rest[1:]) < 65536:
        return None
    return Authority(name, address, int(rest[1:]))


def parse_origin(text: str) -> tuple[str, Authority] | None:
    """An ``Origin`` header as a scheme (http or https) and its authority, else None (``null``, a path,
    another scheme, a malformed authority)."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        return None
    authority = parse_authority(rest)
    return None if authority is None else (scheme, authority)


__all__ = ["Authority", "parse_authority", "parse_origin"]
