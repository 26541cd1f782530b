"""The Kubernetes CEL types CRD rules may build (1.32): ``url``, ``quantity``, ``ip`` and ``cidr``.

k8s.io/apiserver ``pkg/cel/library`` ``urls.go``, ``quantity.go``, ``ip.go`` and ``cidr.go``: the
constructors, their ``is...`` checks, and the member functions, over the tagged values of
:mod:`kubeloop.api._cel_opaque`. A quantity is carried as its exact value (``n`` or ``n/d``), so
arithmetic and comparisons are exact, as upstream's ``inf.Dec``.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kubeloop.api._cel_opaque import MAX_INT64, MIN_INT64, CelFunctionError, expect, opaque_type, tagged
from kubeloop.api._quantity import Quantity, QuantityError, parse_quantity

__all__ = ["KIND_FUNCTIONS", "parse_url"]


# -- url (library/urls.go) -------------------------------------------------------------------------


def parse_url(text: str) -> urllib.parse.SplitResult:
    parsed = urllib.parse.urlsplit(text)
    # Go's url.ParseRequestURI: absolute URIs or absolute paths only, no fragment.
    if not (parsed.scheme or text.startswith("/")) or "#" in text or " " in text:
        raise CelFunctionError(f"URL parse error during conversion from string: parse \"{text}\": invalid URI for request")
    return parsed


def _url(text: str) -> dict[str, Any]:
    parse_url(text)
    return tagged("url", text)


def _is_url(text: str) -> bool:
    try:
        parse_url(text)
    except (CelFunctionError, ValueError):
        return False
    return True


def _url_part(name: str) -> Callable[[Any], Any]:
    def part(value: Any) -> Any:
        parsed = urllib.parse.urlsplit(expect(value, "url", name))
        netloc = parsed.netloc.rpartition("@")[2]
        if name == "getScheme":
            return parsed.scheme
        if name == "getHost":
            return netloc
        if name == "getHostname":
            host = netloc
            if host.startswith("["):
                return host[1:].partition("]")[0]
            return host.rpartition(":")[0] if ":" in host else host
        if name == "getPort":
            host = netloc.rpartition("]")[2] if netloc.startswith("[") else netloc
            return host.rpartition(":")[2] if ":" in host else ""
        if name == "getEscapedPath":
            return parsed.path
        query: dict[str, list[str]] = {}
        for key, item in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
            query.setdefault(key, []).append(item)
        return query

    return part


# -- quantity (library/quantity.go) ----------------------------------------------------------------






def _quantity(text: str) -> dict[str, Any]:
    try:
        q = parse_quantity(text)
    except QuantityError as e:
        raise CelFunctionError(str(e)) from None
    canonical = _canonical_quantity(q)
    return tagged("quantity", canonical)


def _canonical_quantity(q: Quantity) -> str:
    value = q.value
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def _exact(value: Any, name: str) -> Fraction:
    text = expect(value, "quantity", name)
    numerator, _, denominator = text.partition("/")
    return Fraction(int(numerator), int(denominator or "1"))


def _from_fraction(value: Fraction) -> dict[str, Any]:
    if value.denominator == 1:
        return tagged("quantity", str(value.numerator))
    return tagged("quantity", f"{value.numerator}/{value.denominator}")


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _quantity_binary(name: str) -> Callable[[Any, Any], Any]:
    def op(a: Any, b: Any) -> Any:
        left = _exact(a, name)
        right = Fraction(b) if isinstance(b, int) and not isinstance(b, bool) else _exact(b, name)
        if name == "add":
            return _from_fraction(left + right)
        if name == "sub":
            return _from_fraction(left - right)
        if name == "isGreaterThan":
            return left > right
        if name == "isLessThan":
            return left < right
        return (left > right) - (left < right)  # compareTo

    return op


def _quantity_sign(value: Any) -> int:
    v = _exact(value, "sign")
    return (v > 0) - (v < 0)


def _quantity_is_integer(value: Any) -> bool:
    v = _exact(value, "isInteger")
    return v.denominator == 1 and MIN_INT64 <= v.numerator <= MAX_INT64


def _quantity_as_integer(value: Any) -> int:
    v = _exact(value, "asInteger")
    if v.denominator != 1 or not (MIN_INT64 <= v.numerator <= MAX_INT64):
        raise CelFunctionError("cannot convert value to integer")
    return v.numerator


def _quantity_as_float(value: Any) -> float:
    return float(_exact(value, "asApproximateFloat"))


# -- ip and cidr (library/ip.go, cidr.go) ---------------------------------------------------------


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if "%" in text:
        raise CelFunctionError(f"IP address with zone value is not allowed: {text}")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise CelFunctionError(f"IP Address {text!r} parse error during conversion from string: "
                               f"ParseAddr({text!r}): unable to parse IP") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelFunctionError(f"IPv4-mapped IPv6 address is not allowed: {text}")
    return address


def _ip(value: Any) -> dict[str, Any]:
    if opaque_type(value) == "cidr":  # cidr.ip(): the address part
        return tagged("ip", str(ipaddress.ip_interface(str(value["value"])).ip))
    if not isinstance(value, str):
        raise CelFunctionError("no such overload: ip")
    return tagged("ip", str(_parse_ip(value)))


def _is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except CelFunctionError:
        return False
    return True


def _address(value: Any, name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(expect(value, "ip", name))


def _ip_test(name: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: test(_address(value, name))


def _family(value: Any) -> int:
    return _address(value, "family").version


def _parse_cidr(text: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    if "%" in text:
        raise CelFunctionError(f"CIDR with zone value is not allowed: {text}")
    if "/" not in text:
        raise CelFunctionError(f"network address parse error during conversion from string: "
                               f'netip.ParsePrefix("{text}"): no \'/\'')
    try:
        return ipaddress.ip_interface(text)
    except ValueError:
        raise CelFunctionError(f"network address parse error during conversion from string: "
                               f'netip.ParsePrefix("{text}"): bad prefix') from None


def _cidr(text: str) -> dict[str, Any]:
    return tagged("cidr", str(_parse_cidr(text)))


def _is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except CelFunctionError:
        return False
    return True


def _network(value: Any, name: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(expect(value, "cidr", name))


def _contains_ip(cidr: Any, address: Any) -> bool:
    network = _network(cidr, "containsIP").network
    ip = _parse_ip(address) if isinstance(address, str) else _address(address, "containsIP")
    return ip.version == network.version and ip in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    network = _network(cidr, "containsCIDR").network
    inner = (_parse_cidr(other) if isinstance(other, str) else _network(other, "containsCIDR")).network
    return inner.version == network.version and inner.subnet_of(network)  # type: ignore[arg-type]


def _masked(cidr: Any) -> dict[str, Any]:
    return tagged("cidr", str(_network(cidr, "masked").network))


def _prefix_length(cidr: Any) -> int:
    return _network(cidr, "prefixLength").network.prefixlen





def _is_canonical(namespace: Any, text: str) -> bool:
    """``ip.isCanonical(text)``: whether ``text`` is the address as Go's ``netip.Addr.String`` writes it."""
    if opaque_type(namespace) != "namespace":
        raise CelFunctionError("no such overload: isCanonical")
    return str(_parse_ip(text)) == text


def _string_of(value: Any) -> str:
    """``string()`` of an IP, a CIDR or a URL (ip.go, cidr.go, urls.go); CEL's own ``string`` takes the rest."""
    if opaque_type(value) in ("ip", "cidr", "url"):
        return str(value["value"])
    raise CelFunctionError("no such overload: string")


KIND_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "isCanonical": _is_canonical,
    "string": _string_of,
    # url
    "url": _url,
    "isURL": _is_url,
    **{name: _url_part(name) for name in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath",
                                          "getQuery")},
    # quantity
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _quantity_sign,
    "isInteger": _quantity_is_integer,
    "asInteger": _quantity_as_integer,
    "asApproximateFloat": _quantity_as_float,
    **{name: _quantity_binary(name) for name in ("add", "sub", "isGreaterThan", "isLessThan", "compareTo")},
    # ip and cidr
    "ip": _ip,
    "isIP": _is_ip,
    "family": _family,
    "isUnspecified": _ip_test("isUnspecified", lambda a: a.is_unspecified),
    "isLoopback": _ip_test("isLoopback", lambda a: a.is_loopback),
    "isLinkLocalMulticast": _ip_test(
        "isLinkLocalMulticast",
        lambda a: a in ipaddress.ip_network("224.0.0.0/24" if a.version == 4 else "ff02::/16"),
    ),
    "isLinkLocalUnicast": _ip_test("isLinkLocalUnicast", lambda a: a.is_link_local),
    "isGlobalUnicast": _ip_test(
        "isGlobalUnicast",
        lambda a: not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local
                       or (a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"))),
    ),
    "cidr": _cidr,
    "isCIDR": _is_cidr,
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "masked": _masked,
    "prefixLength": _prefix_length,
}
