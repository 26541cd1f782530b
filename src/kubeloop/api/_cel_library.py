"""The Kubernetes CEL libraries a CRD's ``x-kubernetes-validations`` rules may call, as plain functions.

k8s.io/apiserver ``pkg/cel/library`` and cel-go's ``ext`` package give CRD rules (1.32) more than
the CEL standard library: the strings extension (``charAt``, ``indexOf``, ``lastIndexOf``,
``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``join``,
``reverse``, ``format``), the lists library (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
``lastIndexOf``), regex (``find``, ``findAll``), ``url``, ``quantity``, ``ip`` and ``cidr``.

:data:`FUNCTIONS` maps each name to one Python callable; the engine (:mod:`kubeloop.api._cel_engine`)
registers them on every evaluation. A receiver-style call ``x.f(a)`` reaches ``f(x, a)``, so one
callable serves every overload of its name and dispatches on the receiver's type, as cel-go's
overload resolution does at run time.

Upstream's opaque types (``URL``, ``Quantity``, ``IP``, ``CIDR``) travel as small tagged maps
(``{"@type": "quantity", "value": <canonical text>}``): the engine cannot carry a Python object, and
a canonical value keeps ``==`` meaningful (``quantity("1Gi") == quantity("1024Mi")`` holds, as
upstream's ``Equal``). An error is a :class:`CelFunctionError` whose text is upstream's.
"""

from __future__ import annotations

import ipaddress
import math
import re
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kubeloop.api._quantity import Quantity, QuantityError, parse_quantity

__all__ = ["FUNCTIONS", "TYPE_KEY", "CelFunctionError", "opaque_type"]

TYPE_KEY = "@type"
_MAX_INT64 = 2**63 - 1
_MIN_INT64 = -(2**63)


class CelFunctionError(ValueError):
    """A library function refused its arguments; ``str()`` is upstream's error text."""


def opaque_type(value: Any) -> str:
    """``url``, ``quantity``, ``ip`` or ``cidr`` for a tagged value; ``""`` for anything else."""
    if isinstance(value, dict) and isinstance(value.get(TYPE_KEY), str):
        return str(value[TYPE_KEY])
    return ""


def _tagged(kind: str, value: str) -> dict[str, Any]:
    return {TYPE_KEY: kind, "value": value}


def _expect(value: Any, kind: str, name: str) -> str:
    if opaque_type(value) != kind:
        raise CelFunctionError(f"no such overload: {name}")
    return str(value["value"])


# -- strings (cel-go ext/strings.go) -------------------------------------------------------------


def _char_at(s: str, i: int) -> str:
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    return s[i : i + 1]


def _index_of(receiver: Any, item: Any, offset: int = 0) -> int:
    if isinstance(receiver, list):
        for i, element in enumerate(receiver):
            if element == item:
                return i
        return -1
    if not isinstance(receiver, str) or not isinstance(item, str):
        raise CelFunctionError("no such overload: indexOf")
    if offset < 0 or offset > len(receiver):
        raise CelFunctionError(f"index out of range: {offset}")
    return receiver.find(item, offset)


def _last_index_of(receiver: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(receiver, list):
        for i in range(len(receiver) - 1, -1, -1):
            if receiver[i] == item:
                return i
        return -1
    if not isinstance(receiver, str) or not isinstance(item, str):
        raise CelFunctionError("no such overload: lastIndexOf")
    if offset is None:
        return receiver.rfind(item)
    if offset < 0 or offset >= len(receiver) + (1 if not receiver else 0):
        raise CelFunctionError(f"index out of range: {offset}")
    return receiver.rfind(item, 0, offset + len(item))


def _lower_ascii(s: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _upper_ascii(s: str) -> str:
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n if n >= 0 else -1)


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if n > 0 and len(chars) > n:
            return [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    return s.split(sep, n - 1) if n > 0 else s.split(sep)


def _substring(s: str, start: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise CelFunctionError(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        raise CelFunctionError(f"index out of range: {stop}")
    if start > stop:
        raise CelFunctionError(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


def _trim(s: str) -> str:
    # Go's strings.TrimSpace: unicode.IsSpace runes.
    return s.strip("".join(chr(c) for c in (9, 10, 11, 12, 13, 32, 0x85, 0xA0)) + _UNICODE_SPACES)


_UNICODE_SPACES = "".join(
    chr(c) for c in (0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
)


def _join(items: list[Any], sep: str = "") -> str:
    if not all(isinstance(i, str) for i in items):
        raise CelFunctionError("join: list contains non-string elements")
    return sep.join(items)


def _reverse(s: str) -> str:
    return s[::-1]


_VERB = re.compile(r"%(\.\d+)?([a-zA-Z%])")


def _format_value(verb: str, precision: int | None, value: Any) -> str:
    if verb == "s":
        return _cel_string(value)
    if verb == "d":
        if isinstance(value, bool) or not isinstance(value, int):
            raise CelFunctionError("error during formatting: decimal clause can only be used on integers")
        return str(value)
    if verb in ("f", "e"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CelFunctionError(f"error during formatting: {'fixed-point' if verb == 'f' else 'scientific'}"
                                   " clause can only be used on doubles")
        digits = 6 if precision is None else precision
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"{float(value):.{digits}{verb}}"
    if verb in ("x", "X"):
        if isinstance(value, str):
            text = value.encode().hex()
        elif isinstance(value, bytes):
            text = value.hex()
        elif isinstance(value, int) and not isinstance(value, bool):
            text = format(value, "x")
        else:
            raise CelFunctionError("error during formatting: only integers, byte buffers, and strings can be "
                                   "formatted as hex")
        return text.upper() if verb == "X" else text
    if verb == "o":
        if isinstance(value, bool) or not isinstance(value, int):
            raise CelFunctionError("error during formatting: octal clause can only be used on integers")
        return format(value, "o")
    if verb == "b":
        if isinstance(value, bool):
            return "1" if value else "0"
        if not isinstance(value, int):
            raise CelFunctionError("error during formatting: only integers and bools can be formatted as binary")
        return format(value, "b")
    raise CelFunctionError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')


def _format(template: str, args: list[Any]) -> str:
    out: list[str] = []
    position = 0
    used = 0
    for match in _VERB.finditer(template):
        out.append(template[position : match.start()])
        position = match.end()
        verb = match.group(2)
        if verb == "%":
            out.append("%")
            continue
        if used >= len(args):
            raise CelFunctionError(f"index {used} out of range")
        precision = int(match.group(1)[1:]) if match.group(1) else None
        out.append(_format_value(verb, precision, args[used]))
        used += 1
    out.append(template[position:])
    return "".join(out)


def _cel_string(value: Any) -> str:
    """How ``%s`` and ``string()`` show a value (cel-go's formatting of lists and maps)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value) if not value.is_integer() or abs(value) >= 1e21 else str(int(value))
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return "[" + ", ".join(_cel_string(v) for v in value) + "]"
    if isinstance(value, dict):
        kind = opaque_type(value)
        if kind:
            return str(value["value"])
        return "{" + ", ".join(f"{_cel_string(k)}: {_cel_string(v)}" for k, v in value.items()) + "}"
    return str(value)


# -- lists (k8s.io/apiserver pkg/cel/library/lists.go) -------------------------------------------


def _comparable(items: list[Any], name: str) -> list[Any]:
    if any(isinstance(i, (dict, list)) for i in items):
        raise CelFunctionError(f"no such overload: {name}")
    return items


def _is_sorted(items: list[Any]) -> bool:
    _comparable(items, "isSorted")
    try:
        return all(items[i] <= items[i + 1] for i in range(len(items) - 1))
    except TypeError:
        raise CelFunctionError("no such overload: isSorted") from None


def _sum(items: list[Any]) -> Any:
    _comparable(items, "sum")
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        if type(item) is not type(total):
            raise CelFunctionError("no such overload: sum")
        total = total + item
    if isinstance(total, int) and not (_MIN_INT64 <= total <= _MAX_INT64):
        raise CelFunctionError("integer overflow")
    return total


def _extreme(items: list[Any], name: str, pick: Callable[[list[Any]], Any]) -> Any:
    _comparable(items, name)
    if not items:
        raise CelFunctionError(f"{name} called on empty list")
    try:
        return pick(items)
    except TypeError:
        raise CelFunctionError(f"no such overload: {name}") from None


def _min(items: list[Any]) -> Any:
    return _extreme(items, "min", min)


def _max(items: list[Any]) -> Any:
    return _extreme(items, "max", max)


# -- regex (library/regex.go) --------------------------------------------------------------------


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise CelFunctionError(f"Illegal regex: {e}") from None


def _find(s: str, pattern: str) -> str:
    match = _regex(pattern).search(s)
    return match.group(0) if match else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found[:limit] if limit > 0 else found


# -- url (library/urls.go) -------------------------------------------------------------------------


def _parse_url(text: str) -> urllib.parse.SplitResult:
    parsed = urllib.parse.urlsplit(text)
    # Go's url.ParseRequestURI: absolute URIs or absolute paths only, no fragment.
    if not (parsed.scheme or text.startswith("/")) or "#" in text or " " in text:
        raise CelFunctionError(f"URL parse error during conversion from string: parse \"{text}\": invalid URI for request")
    return parsed


def _url(text: str) -> dict[str, Any]:
    _parse_url(text)
    return _tagged("url", text)


def _is_url(text: str) -> bool:
    try:
        _parse_url(text)
    except (CelFunctionError, ValueError):
        return False
    return True


def _url_part(name: str) -> Callable[[Any], Any]:
    def part(value: Any) -> Any:
        parsed = urllib.parse.urlsplit(_expect(value, "url", name))
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
    return _tagged("quantity", canonical)


def _canonical_quantity(q: Quantity) -> str:
    value = q.value
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def _exact(value: Any, name: str) -> Fraction:
    text = _expect(value, "quantity", name)
    numerator, _, denominator = text.partition("/")
    return Fraction(int(numerator), int(denominator or "1"))


def _from_fraction(value: Fraction) -> dict[str, Any]:
    if value.denominator == 1:
        return _tagged("quantity", str(value.numerator))
    return _tagged("quantity", f"{value.numerator}/{value.denominator}")


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
    return v.denominator == 1 and _MIN_INT64 <= v.numerator <= _MAX_INT64


def _quantity_as_integer(value: Any) -> int:
    v = _exact(value, "asInteger")
    if v.denominator != 1 or not (_MIN_INT64 <= v.numerator <= _MAX_INT64):
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
        return _tagged("ip", str(ipaddress.ip_interface(str(value["value"])).ip))
    if not isinstance(value, str):
        raise CelFunctionError("no such overload: ip")
    return _tagged("ip", str(_parse_ip(value)))


def _is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except CelFunctionError:
        return False
    return True


def _address(value: Any, name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(_expect(value, "ip", name))


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
    return _tagged("cidr", str(_parse_cidr(text)))


def _is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except CelFunctionError:
        return False
    return True


def _network(value: Any, name: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(_expect(value, "cidr", name))


def _contains_ip(cidr: Any, address: Any) -> bool:
    network = _network(cidr, "containsIP").network
    ip = _parse_ip(address) if isinstance(address, str) else _address(address, "containsIP")
    return ip.version == network.version and ip in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    network = _network(cidr, "containsCIDR").network
    inner = (_parse_cidr(other) if isinstance(other, str) else _network(other, "containsCIDR")).network
    return inner.version == network.version and inner.subnet_of(network)  # type: ignore[arg-type]


def _masked(cidr: Any) -> dict[str, Any]:
    return _tagged("cidr", str(_network(cidr, "masked").network))


def _prefix_length(cidr: Any) -> int:
    return _network(cidr, "prefixLength").network.prefixlen




FUNCTIONS: dict[str, Callable[..., Any]] = {
    # strings
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "reverse": _reverse,
    "format": _format,
    # lists
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
    # regex
    "find": _find,
    "findAll": _find_all,
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
# Names the engine must not shadow are absent: size, matches, startsWith, endsWith, contains, string,
# int, uint, double, bytes, bool, duration, timestamp, type, dyn and the macros are CEL's own.
