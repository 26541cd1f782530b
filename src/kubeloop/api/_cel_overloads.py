"""The declared overloads of CEL's operators and functions that kubeloop's type checker resolves (1.32).

Each entry is written as cel-go prints a signature: ``(int, int) -> int`` for a global function or
operator, ``string.(string) -> bool`` for a receiver-style one; ``A``, ``B``, ``K`` and ``V`` are type
parameters. Sources: cel-go ``common/stdlib/standard.go`` (operators, conversions, ``size``, string
predicates, timestamp and duration accessors; Kubernetes enables ``CrossTypeNumericComparisons``, so
``<`` and friends take any two numeric types), cel-go ``ext/strings.go`` (version 2) and ``ext/sets.go``,
and k8s.io/apiserver ``pkg/cel/library`` ``lists.go``, ``regex.go``, ``urls.go``, ``quantity.go``,
``ip.go``, ``cidr.go`` and ``format.go``.

A function that kubeloop runs but that is not listed here (the ``authorizer`` library, for one) is
typed dyn and never reported: the table only adds errors where it is sure of upstream's signatures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubeloop.api._cel_types import CelType

__all__ = ["OVERLOADS", "Overload", "parse_type"]


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature: receiver-style or not, the parameter types and the result type."""

    member: bool
    params: tuple[CelType, ...]
    result: CelType


_TYPE_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*|[(),])")


def parse_type(text: str) -> CelType:
    """``list(map(string, A))`` as a :class:`CelType`."""
    tokens = _TYPE_TOKEN.findall(text)
    position = 0

    def one() -> CelType:
        nonlocal position
        name = tokens[position]
        position += 1
        params: list[CelType] = []
        if position < len(tokens) and tokens[position] == "(":
            position += 1
            while tokens[position] != ")":
                params.append(one())
                if tokens[position] == ",":
                    position += 1
            position += 1
        return CelType(name, tuple(params))

    return one()


def _signature(text: str) -> Overload:
    head, _, result = text.partition("->")
    member = not head.strip().startswith("(")
    receiver, _, rest = head.partition("(") if not member else head.partition(".(")
    inner = rest.strip()[:-1]  # drop the closing parenthesis
    params = _split(inner)
    if member:
        params = [receiver.strip(), *params]
    return Overload(member, tuple(parse_type(p) for p in params), parse_type(result.strip()))


def _split(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += (char == "(") - (char == ")")
        current += char
    if current.strip():
        parts.append(current.strip())
    return parts


_NUMBERS = ("int", "uint", "double")
_ORDERED = ("bool", "string", "bytes", "timestamp", "duration")
_COMPARE = [f"({a}, {b}) -> bool" for a in _NUMBERS for b in _NUMBERS] + [f"({a}, {a}) -> bool" for a in _ORDERED]
_TIME_PARTS = ("getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
               "getMinutes", "getSeconds", "getMilliseconds")
_DURATION_PARTS = ("getHours", "getMinutes", "getSeconds", "getMilliseconds")
_IP_PREDICATES = ("isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast")
_URL_PARTS = ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")

_TABLE: dict[str, list[str]] = {
    "_+_": ["(int, int) -> int", "(uint, uint) -> uint", "(double, double) -> double",
            "(string, string) -> string", "(bytes, bytes) -> bytes", "(list(A), list(A)) -> list(A)",
            "(timestamp, duration) -> timestamp", "(duration, timestamp) -> timestamp",
            "(duration, duration) -> duration"],
    "_-_": ["(int, int) -> int", "(uint, uint) -> uint", "(double, double) -> double",
            "(timestamp, timestamp) -> duration", "(timestamp, duration) -> timestamp",
            "(duration, duration) -> duration"],
    "_*_": ["(int, int) -> int", "(uint, uint) -> uint", "(double, double) -> double"],
    "_/_": ["(int, int) -> int", "(uint, uint) -> uint", "(double, double) -> double"],
    "_%_": ["(int, int) -> int", "(uint, uint) -> uint"],
    "-_": ["(int) -> int", "(double) -> double"],
    "!_": ["(bool) -> bool"],
    "_&&_": ["(bool, bool) -> bool"],
    "_||_": ["(bool, bool) -> bool"],
    "_<_": _COMPARE, "_<=_": _COMPARE, "_>_": _COMPARE, "_>=_": _COMPARE,
    "_==_": ["(A, A) -> bool"], "_!=_": ["(A, A) -> bool"],
    "@in": ["(A, list(A)) -> bool", "(A, map(A, B)) -> bool"],
    "_[_]": ["(list(A), int) -> A", "(map(K, V), K) -> V"],
    "_?_:_": ["(bool, A, A) -> A"],
    "size": ["(string) -> int", "(bytes) -> int", "(list(A)) -> int", "(map(K, V)) -> int",
             "string.() -> int", "bytes.() -> int", "list(A).() -> int", "map(K, V).() -> int"],
    "contains": ["string.(string) -> bool"],
    "startsWith": ["string.(string) -> bool"],
    "endsWith": ["string.(string) -> bool"],
    "matches": ["(string, string) -> bool", "string.(string) -> bool"],
    "int": ["(int) -> int", "(uint) -> int", "(double) -> int", "(string) -> int", "(timestamp) -> int",
            "(duration) -> int"],
    "uint": ["(uint) -> uint", "(int) -> uint", "(double) -> uint", "(string) -> uint"],
    "double": ["(double) -> double", "(int) -> double", "(uint) -> double", "(string) -> double"],
    "string": ["(string) -> string", "(int) -> string", "(uint) -> string", "(double) -> string",
               "(bool) -> string", "(bytes) -> string", "(timestamp) -> string", "(duration) -> string",
               "(net.IP) -> string", "(net.CIDR) -> string"],
    "bytes": ["(bytes) -> bytes", "(string) -> bytes"],
    "bool": ["(bool) -> bool", "(string) -> bool"],
    "duration": ["(duration) -> duration", "(string) -> duration"],
    "timestamp": ["(timestamp) -> timestamp", "(string) -> timestamp", "(int) -> timestamp"],
    "dyn": ["(A) -> dyn"],
    "type": ["(A) -> type"],
    # cel-go ext/strings.go, version 2
    "charAt": ["string.(int) -> string"],
    "indexOf": ["string.(string) -> int", "string.(string, int) -> int", "list(A).(A) -> int"],
    "lastIndexOf": ["string.(string) -> int", "string.(string, int) -> int", "list(A).(A) -> int"],
    "lowerAscii": ["string.() -> string"],
    "upperAscii": ["string.() -> string"],
    "replace": ["string.(string, string) -> string", "string.(string, string, int) -> string"],
    "split": ["string.(string) -> list(string)", "string.(string, int) -> list(string)"],
    "substring": ["string.(int) -> string", "string.(int, int) -> string"],
    "trim": ["string.() -> string"],
    "join": ["list(string).() -> string", "list(string).(string) -> string"],
    "reverse": ["string.() -> string"],
    "format": ["string.(list(dyn)) -> string"],
    "strings.quote": ["(string) -> string"],
    # k8s.io/apiserver pkg/cel/library lists.go and regex.go
    "isSorted": ["list(A).() -> bool"],
    "sum": ["list(A).() -> A"],
    "min": ["list(A).() -> A"],
    "max": ["list(A).() -> A"],
    "find": ["string.(string) -> string"],
    "findAll": ["string.(string) -> list(string)", "string.(string, int) -> list(string)"],
    # urls.go
    "url": ["(string) -> kubernetes.URL"],
    "isURL": ["(string) -> bool"],
    "getQuery": ["kubernetes.URL.() -> map(string, list(string))"],
    # quantity.go
    "quantity": ["(string) -> kubernetes.Quantity"],
    "isQuantity": ["(string) -> bool"],
    "sign": ["kubernetes.Quantity.() -> int"],
    "isGreaterThan": ["kubernetes.Quantity.(kubernetes.Quantity) -> bool"],
    "isLessThan": ["kubernetes.Quantity.(kubernetes.Quantity) -> bool"],
    "compareTo": ["kubernetes.Quantity.(kubernetes.Quantity) -> int"],
    "add": ["kubernetes.Quantity.(kubernetes.Quantity) -> kubernetes.Quantity",
            "kubernetes.Quantity.(int) -> kubernetes.Quantity"],
    "sub": ["kubernetes.Quantity.(kubernetes.Quantity) -> kubernetes.Quantity",
            "kubernetes.Quantity.(int) -> kubernetes.Quantity"],
    "isInteger": ["kubernetes.Quantity.() -> bool"],
    "asInteger": ["kubernetes.Quantity.() -> int"],
    "asApproximateFloat": ["kubernetes.Quantity.() -> double"],
    # ip.go and cidr.go
    "ip": ["(string) -> net.IP", "net.CIDR.() -> net.IP"],
    "isIP": ["(string) -> bool"],
    "ip.isCanonical": ["(string) -> bool"],
    "family": ["net.IP.() -> int"],
    "cidr": ["(string) -> net.CIDR"],
    "isCIDR": ["(string) -> bool"],
    "containsIP": ["net.CIDR.(net.IP) -> bool", "net.CIDR.(string) -> bool"],
    "containsCIDR": ["net.CIDR.(net.CIDR) -> bool", "net.CIDR.(string) -> bool"],
    "masked": ["net.CIDR.() -> net.CIDR"],
    "prefixLength": ["net.CIDR.() -> int"],
    # cel-go ext/sets.go
    "sets.contains": ["(list(A), list(A)) -> bool"],
    "sets.equivalent": ["(list(A), list(A)) -> bool"],
    "sets.intersects": ["(list(A), list(A)) -> bool"],
    # format.go
    "format.named": ["(string) -> optional_type(kubernetes.NamedFormat)"],
    "validate": ["kubernetes.NamedFormat.(string) -> optional_type(list(string))"],
    # optional values (cel-go OptionalTypes)
    "optional.of": ["(A) -> optional_type(A)"],
    "optional.ofNonZeroValue": ["(A) -> optional_type(A)"],
    "optional.none": ["() -> optional_type(dyn)"],
    "hasValue": ["optional_type(A).() -> bool"],
    "value": ["optional_type(A).() -> A"],
    "orValue": ["optional_type(A).(A) -> A"],
    "or": ["optional_type(A).(optional_type(A)) -> optional_type(A)"],
}
for _part in _TIME_PARTS:
    _TABLE[_part] = ["timestamp.() -> int", "timestamp.(string) -> int"]
for _part in _DURATION_PARTS:
    _TABLE[_part].append("duration.() -> int")
for _part in _IP_PREDICATES:
    _TABLE[_part] = ["net.IP.() -> bool"]
for _part in _URL_PARTS:
    _TABLE[_part] = ["kubernetes.URL.() -> string"]

OVERLOADS: Mapping[str, tuple[Overload, ...]] = {
    name: tuple(_signature(s) for s in signatures) for name, signatures in _TABLE.items()}
