"""IP addresses as Kubernetes 1.32 parses API fields: ``netutils.ParseIPSloppy`` (k8s.io/utils/net).

Go 1.17 made ``net.ParseIP`` refuse IPv4 octets with leading zeros (CVE-2021-29923); Kubernetes kept the
parser from before (``ParseIPSloppy``, kubernetes#104368) so that stored objects stay valid, and reads
each octet as decimal: ``010.0.0.1`` is 10.0.0.1, never octal. Validation of Endpoints and EndpointSlice
addresses in 1.32 (apimachinery ``validation.IsValidIP``, ``IsValidIPv4Address``, ``IsValidIPv6Address``;
core ``ValidateNonSpecialIP``) uses it, and so does the endpointslice-mirroring controller
(``getAddressType``), so an address one accepts the other reads the same way.

Contract of :func:`parse_ip_sloppy`: the address the text names, or ``None``. Accepted: Python's IPv4 and
IPv6 forms without a zone (Go's parser has no ``%zone``), and IPv4 octets written with any number of
decimal digits (``0010`` is 10), also as the IPv4 tail of an IPv6 address; each octet at most 255.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

__all__ = ["parse_ip_sloppy"]

_IPV4 = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")  # ASCII digits only: Go's dtoi


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    if not _IPV4.fullmatch(text):
        return None
    octets = [int(part) for part in text.split(".")]
    if any(octet > 255 for octet in octets):
        return None
    return ipaddress.IPv4Address(".".join(map(str, octets)))


def parse_ip_sloppy(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``netutils.ParseIPSloppy(text)`` as a Python address (``None`` where it returns nil)."""
    if not isinstance(text, str) or not text or "%" in text:
        return None
    if ":" not in text:
        return _ipv4(text)
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        head, _, tail = text.rpartition(":")  # an embedded IPv4 address is the last part
        if "." not in tail:
            return None
        v4 = _ipv4(tail)
        if v4 is None:
            return None
        try:
            return ipaddress.IPv6Address(f"{head}:{v4}")
        except ValueError:
            return None
