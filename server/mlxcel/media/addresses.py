"""Which IP addresses a media URL may reach: public unicast only, IPv4 as written inside IPv6.

An IPv6 address can carry an IPv4 address, and the route to it then ends at that IPv4 host
(or a translator in front of it): ``::ffff:127.0.0.1`` is loopback, and so are
``::7f00:1`` (IPv4-compatible, RFC 4291 section 2.5.5.1), ``::ffff:0:7f00:1``
(IPv4-translated, RFC 2765 section 2.1), ``64:ff9b::7f00:1`` (NAT64's well-known prefix,
RFC 6052 section 2.1), ``2002:7f00:1::`` (6to4, RFC 3056 section 2) and the Teredo client of
``2001::/32`` (RFC 4380 section 4). Python's ``ipaddress`` calls several of these global, so the
IPv4 address inside is judged instead. NAT64's local-use prefix ``64:ff9b:1::/48`` (RFC 8215)
places the IPv4 address by the operator's prefix length, so it is never public.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Prefixes whose last 32 bits are an IPv4 address.
_LOW_32_EMBEDDINGS = tuple(ipaddress.IPv6Network(net) for net in (
    "::/96",           # IPv4-compatible (deprecated, still routed by some stacks)
    "::ffff:0:0/96",   # IPv4-mapped
    "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
    "64:ff9b::/96",    # NAT64 well-known prefix
))
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``ip`` leads to, when it is one written in IPv6."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip.is_unspecified or ip == ipaddress.IPv6Address("::1"):
        return None  # ::/96 also holds these two, which are IPv6's own
    if any(ip in net for net in _LOW_32_EMBEDDINGS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(address: str) -> bool:
    """Whether a resolved address (an IPv6 zone ``%eth0`` allowed) is public unicast."""
    ip: Address = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return False
        inner = embedded_ipv4(ip)
        if inner is not None:
            ip = inner
    return ip.is_global and not ip.is_multicast
