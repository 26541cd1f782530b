"""cel-go's sets extension and Kubernetes' format library for CRD rules (1.32), as plain callables.

``sets.contains``, ``sets.equivalent``, ``sets.intersects`` (cel-go ``ext/sets.go``, in the base
environment since 1.29) and ``format.<name>()``, ``format.named(name)``, ``<format>.validate(text)``
(k8s.io/apiserver ``pkg/cel/library/format.go``, since 1.31: ``validate`` is an optional list of
apimachinery's validation messages). ``sets`` and ``format`` are bound as tagged namespace values
(:data:`NAMESPACES`) so that ``sets.contains(a, b)`` reaches ``contains(<sets>, a, b)`` (and
``ip.isCanonical(s)`` reaches ``isCanonical(<ip>, s)``, while ``ip(s)`` stays a function call).
"""

from __future__ import annotations

import base64
import datetime
import re
from collections.abc import Callable
from typing import Any

import cel

from kubeloop.api._cel_kinds import parse_url
from kubeloop.api._cel_opaque import CelFunctionError, expect, opaque_type, tagged
from kubeloop.api._validation import (
    is_qualified_name,
    is_valid_label_value,
    name_is_dns1035_label,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
)

__all__ = ["EXTENSION_FUNCTIONS", "NAMESPACES"]


# -- sets (cel-go ext/sets.go, in the base environment since 1.29) -------------------------------------


def _namespace(value: Any, name: str) -> bool:
    return opaque_type(value) == "namespace" and value.get("value") == name


def _sets_contains(receiver: Any, *args: Any) -> bool:
    if isinstance(receiver, str) and len(args) == 1 and isinstance(args[0], str):
        return args[0] in receiver  # the string overload, should the engine hand it over
    if not _namespace(receiver, "sets") or len(args) != 2:
        raise CelFunctionError("no such overload: contains")
    return all(any(_equal(item, have) for have in args[0]) for item in args[1])


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _sets_equivalent(receiver: Any, a: list[Any], b: list[Any]) -> bool:
    if not _namespace(receiver, "sets"):
        raise CelFunctionError("no such overload: equivalent")
    return _sets_contains(receiver, a, b) and _sets_contains(receiver, b, a)


def _sets_intersects(receiver: Any, a: list[Any], b: list[Any]) -> bool:
    if not _namespace(receiver, "sets"):
        raise CelFunctionError("no such overload: intersects")
    return any(any(_equal(x, y) for y in b) for x in a)


# -- format (library/format.go, in the base environment since 1.31) -----------------------------------

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _format_checks() -> dict[str, Callable[[str], list[str]]]:
    def parses(check: Callable[[str], object], message: str) -> Callable[[str], list[str]]:
        def run(text: str) -> list[str]:
            try:
                check(text)
            except (ValueError, TypeError):
                return [message]
            return []
        return run

    def uri(text: str) -> None:
        parse_url(text)

    return {
        "dns1123Label": lambda t: name_is_dns1123_label(t, False),
        "dns1123Subdomain": lambda t: name_is_dns1123_subdomain(t, False),
        "dns1035Label": lambda t: name_is_dns1035_label(t, False),
        "qualifiedName": is_qualified_name,
        "dns1123LabelPrefix": lambda t: name_is_dns1123_label(t, True),
        "dns1123SubdomainPrefix": lambda t: name_is_dns1123_subdomain(t, True),
        "dns1035LabelPrefix": lambda t: name_is_dns1035_label(t, True),
        "labelValue": is_valid_label_value,
        "uri": parses(uri, "invalid URI"),
        "uuid": lambda t: [] if _UUID.match(t) else ["does not match the UUID format"],
        "byte": parses(lambda t: base64.b64decode(t, validate=True), "invalid base64"),
        "date": parses(lambda t: datetime.date.fromisoformat(t) if len(t) == 10 else int("x"), "invalid date"),
        "datetime": parses(lambda t: datetime.datetime.fromisoformat(t.replace("Z", "+00:00")), "invalid datetime"),
    }


_FORMATS = _format_checks()


def _format_named(receiver: Any, name: str) -> Any:
    if not _namespace(receiver, "format"):
        raise CelFunctionError("no such overload: named")
    return cel.OptionalValue.of(tagged("format", name)) if name in _FORMATS else cel.OptionalValue.none()


def _format_getter(name: str) -> Callable[[Any], dict[str, Any]]:
    def get(receiver: Any) -> dict[str, Any]:
        if not _namespace(receiver, "format"):
            raise CelFunctionError(f"no such overload: {name}")
        return tagged("format", name)
    return get


def _format_validate(fmt: Any, text: str) -> Any:
    errors = _FORMATS[expect(fmt, "format", "validate")](text)
    return cel.OptionalValue.of(errors) if errors else cel.OptionalValue.none()



# The receivers of namespaced functions (sets.contains(...), format.dns1123Label()): bound as variables.
NAMESPACES: dict[str, dict[str, Any]] = {name: tagged("namespace", name) for name in ("sets", "format", "ip")}


EXTENSION_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": _sets_contains,
    "equivalent": _sets_equivalent,
    "intersects": _sets_intersects,
    "named": _format_named,
    "validate": _format_validate,
    **{name: _format_getter(name) for name in _FORMATS},
}
