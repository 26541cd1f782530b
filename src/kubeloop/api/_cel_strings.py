"""The CEL string, list and regex functions CRD rules may call (1.32), as plain Python callables.

cel-go ``ext/strings.go`` (version 2: ``charAt``, ``indexOf``, ``lastIndexOf``, ``lowerAscii``,
``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``join``, ``reverse``, ``format``),
k8s.io/apiserver ``pkg/cel/library/lists.go`` (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
``lastIndexOf``) and ``regex.go`` (``find``, ``findAll``). A receiver call ``x.f(a)`` arrives as
``f(x, a)``; ``indexOf`` and ``lastIndexOf`` serve strings and lists by the receiver's type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from kubeloop.api._cel_opaque import MAX_INT64, MIN_INT64, CelFunctionError, opaque_type

__all__ = ["STRING_FUNCTIONS", "cel_string"]


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
        return cel_string(value)
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


def cel_string(value: Any) -> str:
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
        return "[" + ", ".join(cel_string(v) for v in value) + "]"
    if isinstance(value, dict):
        kind = opaque_type(value)
        if kind:
            return str(value["value"])
        return "{" + ", ".join(f"{cel_string(k)}: {cel_string(v)}" for k, v in value.items()) + "}"
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
    if isinstance(total, int) and not (MIN_INT64 <= total <= MAX_INT64):
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



STRING_FUNCTIONS: dict[str, Callable[..., Any]] = {
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
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "find": _find,
    "findAll": _find_all,
}
