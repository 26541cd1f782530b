"""Go ``encoding/json``'s names for decoded JSON values, for upstream's "cannot unmarshal" messages.

When a JSON value cannot be stored in a Go value, ``encoding/json`` reports an ``UnmarshalTypeError``
whose ``Value`` names what it found: ``object``, ``array``, ``string``, ``bool``, ``number``, or
``number <literal>`` when a number does not fit the integer type it was aimed at (Go's
``encoding/json/decode.go``, ``literalStore``). A JSON ``null`` never fails to decode in Go; callers
that still need a word for it (the strategic merge patch's own messages) get ``null``. One function,
so every message that names a JSON value names it the same way.
"""

from __future__ import annotations

from typing import Any

__all__ = ["go_json_kind"]


def go_json_kind(value: Any, *, with_number: bool = False) -> str:
    """The name Go gives ``value`` (a decoded JSON value); ``with_number`` adds a number's text
    (``number 1.5``), as Go does for a number that does not fit an integer field."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {value}" if with_number else "number"
    return "null"
