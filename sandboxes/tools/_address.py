"""The address policy of web_fetch: which names and addresses it may connect to, and the resolver.

A host is resolved once and every address it has is checked, so a name cannot pass with one address
and be used with another; docs/concepts.md (web_fetch) lists what is refused.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

import anyio

from machine.errors import MachineError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
"""An IPv4 or IPv6 address."""

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


async def vetted(host: str, port: int, resolve: Resolver, allow: Policy) -> list[IPAddress]:
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
