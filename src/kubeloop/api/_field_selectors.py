"""Field selectors: parse, match, print, as apimachinery ``pkg/fields/selector.go`` does.

Syntax: ``f=v``, ``f==v`` (the same term, printed ``=``), ``f!=v``; comma = AND; values escaped
with ``\\,`` ``\\=`` ``\\\\``. Malformed input raises :class:`BadRequest` with upstream's texts
(``invalid selector: ...``, ``invalid field selector: ...``).

:meth:`FieldSelector.matches` reads dotted paths from the JSON object (booleans as
``true``/``false``, numbers in decimal, a missing field as ``""``) with the few per-kind mappings
upstream's ``ToSelectableFields`` functions make (Event ``source``; Go bools that default to
``false``). :func:`check_field_selector` rejects fields a kind does not support with upstream's
texts, and :func:`requires_exact_name` finds a ``metadata.name=X`` term. Selectors are immutable
and precompile their paths, since matching runs for every object of every list and watch.
Requirements are kept in canonical order, so ``parse_field_selector(str(sel)) == sel``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api._errors import BadRequest

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "check_field_selector",
    "escape_field_value",
    "field_value",
    "parse_field_selector",
    "requires_exact_name",
]


def escape_field_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Go prints the rune with %v, i.e. as its code point.
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start, in_slash = 0, False
    for i, ch in enumerate(text):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``field=value`` (``==`` is the same term) or ``field!=value``."""

    field: str
    operator: str
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_field_value(self.value)}"


def _scalar_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return ""


# Fields whose value is not a plain path into the JSON object (k/k pkg/registry/.../strategy.go
# ToSelectableFields / *ToSelectableFields): Go bools that default to false, and Event "source".
_FIELD_DEFAULTS: dict[tuple[str, str], str] = {
    ("Pod", "spec.hostNetwork"): "false",
    ("Node", "spec.unschedulable"): "false",
    # ControllerToSelectableFields: strconv.Itoa(int(status.replicas)), "0" when unset.
    ("ReplicationController", "status.replicas"): "0",
}


def _resolve(obj: Mapping[str, Any], parts: tuple[str, ...], path: str, kind: str) -> str:
    current: Any = obj
    for part in parts:
        # JSON objects are dicts; isinstance against the Mapping ABC would cost more than the lookup.
        if not isinstance(current, dict):
            current = None
            break
        current = current.get(part)
    if current is None:
        if kind == "Event" and path == "source":
            return _scalar_string(obj.get("reportingComponent"))
        return _FIELD_DEFAULTS.get((kind, path), "") if kind else ""
    if isinstance(current, str):
        return current
    return _scalar_string(current)


def _parts(path: str, kind: str) -> tuple[str, ...]:
    # Event "source" is source.component, falling back to reportingComponent (k/k event strategy).
    return ("source", "component") if kind == "Event" and path == "source" else tuple(path.split("."))


def field_value(obj: Mapping[str, Any], path: str, *, kind: str = "") -> str:
    """The string a field selector compares for ``path`` (dotted) in ``obj`` of ``kind``."""
    return _resolve(obj, _parts(path, kind), path, kind)


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of :class:`FieldRequirement`; ``FieldSelector()`` matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()
    matches_nothing: bool = False
    _plan: tuple[tuple[tuple[str, ...], str, bool, str], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        plan = tuple((tuple(r.field.split(".")), r.field, r.operator == "=", r.value) for r in self.requirements)
        object.__setattr__(self, "_plan", plan)

    @classmethod
    def everything(cls) -> FieldSelector:
        return cls()

    @classmethod
    def nothing(cls) -> FieldSelector:
        return cls(matches_nothing=True)

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.matches_nothing

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def matches(self, obj: Mapping[str, Any], *, kind: str = "") -> bool:
        """Whether ``obj`` (a JSON object of ``kind``) satisfies every term."""
        if self.matches_nothing:
            return False
        for parts, path, want_equal, value in self._plan:
            if kind == "Event" and path == "source":
                parts = _parts(path, kind)
            if (_resolve(obj, parts, path, kind) == value) != want_equal:
                return False
        return True

    def requires_exact_match(self, name: str) -> str | None:
        for req in self.requirements:
            if req.field == name and req.operator == "=":
                return req.value
        return None


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse the ``fieldSelector`` syntax; "" and None match everything.

    Raises :class:`BadRequest` with upstream's message (``invalid selector: ...``).
    """
    if not text:
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        value = _unescape_field_value(rhs)
        if not lhs and not value:
            continue  # Transform drops a term whose field and value are both empty
        reqs.append(FieldRequirement(lhs, "!=" if op == "!=" else "=", value))
    # Canonical order (by printed term) so that str() is stable under a parse round trip.
    reqs.sort(key=str)
    return FieldSelector(tuple(reqs))


_META_FIELDS = ("metadata.name", "metadata.namespace")


def check_field_selector(selector: FieldSelector, allowed_fields: Iterable[str], *, custom: bool) -> None:
    """Raise :class:`BadRequest` for the first field the kind does not support.

    ``metadata.name`` and ``metadata.namespace`` are always allowed; ``allowed_fields`` are the
    kind's extra ones (``ResourceInfo.field_selectors``). Kinds with their own field-label
    conversion answer ``field label not supported: x``; custom resources and built-ins that only
    have the default conversion (no extra fields, e.g. ConfigMap) answer
    ``"x" is not a known field selector: only "metadata.name", "metadata.namespace"``
    (apimachinery ``runtime/scheme.go`` DefaultMetaV1FieldSelectorConversion).
    """
    allowed = set(allowed_fields)
    default_conversion = custom or not allowed
    allowed.update(_META_FIELDS)
    for req in selector.requirements:
        if req.field in allowed:
            continue
        if default_conversion:
            raise BadRequest(f'"{req.field}" is not a known field selector: only "metadata.name", "metadata.namespace"')
        raise BadRequest(f"field label not supported: {req.field}")


def requires_exact_name(selector: FieldSelector | str | None) -> str | None:
    """The name a ``metadata.name=X`` term pins the selector to, else None.

    Authorization checks a list/watch with such a selector as a request for object X, and a
    watch on ``.../NAME`` is a watch with this selector.
    """
    if selector is None:
        return None
    parsed = parse_field_selector(selector) if isinstance(selector, str) else selector
    return parsed.requires_exact_match("metadata.name")
