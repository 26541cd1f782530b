"""Upstream's opaque CEL values (``URL``, ``Quantity``, ``IP``, ``CIDR``, a format, a library namespace)
as the engine carries them: small tagged maps, ``{"@type": "quantity", "value": <canonical text>}``.

The engine cannot hold a Python object, and a canonical value keeps ``==`` meaningful
(``quantity("1Gi") == quantity("1024Mi")`` holds, as upstream's ``Equal``). A library function's
refusal is a :class:`CelFunctionError` whose text is upstream's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_INT64", "MIN_INT64", "TYPE_KEY", "CelFunctionError", "expect", "opaque_type", "tagged"]

TYPE_KEY = "@type"
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)


class CelFunctionError(ValueError):
    """A library function refused its arguments; ``str()`` is upstream's error text."""


def opaque_type(value: Any) -> str:
    """``url``, ``quantity``, ``ip``, ``cidr``, ``format`` or ``namespace`` for a tagged value; else ``""``."""
    if isinstance(value, dict) and isinstance(value.get(TYPE_KEY), str):
        return str(value[TYPE_KEY])
    return ""


def tagged(kind: str, value: str) -> dict[str, Any]:
    return {TYPE_KEY: kind, "value": value}


def expect(value: Any, kind: str, name: str) -> str:
    """The value of a tagged ``kind``, or the ``no such overload`` error of function ``name``."""
    if opaque_type(value) != kind:
        raise CelFunctionError(f"no such overload: {name}")
    return str(value["value"])
