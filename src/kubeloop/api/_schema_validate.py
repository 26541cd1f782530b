"""Validation, pruning and defaulting of objects against a CRD ``openAPIV3Schema`` (pure functions).

This is what upstream's apiextensions-apiserver does to a custom resource on every write, in the same
order (k/k ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go``
``unstructuredSchemaCoercer.apply``, then the defaulting decoder, then
``pkg/apiserver/validation/validation.go`` ``ValidateCustomResource``):

1. :func:`prune` drops every field the schema does not declare (unless an enclosing schema sets
   ``x-kubernetes-preserve-unknown-fields``) and returns the dropped paths (``spec.foo``,
   ``spec.items[0].bar``): the server reports them as ``unknown field "spec.foo"`` under
   ``fieldValidation=Strict``/``Warn`` (``pkg/apiserver/schema/pruning/algorithm.go``).
   ``apiVersion``, ``kind`` and ``metadata`` are kept at the root and in embedded resources.
2. :func:`drop_nulls` removes ``null`` values of non-nullable fields that have no default
   (``structuraldefaulting.PruneNonNullableNullsWithoutDefaults``).
3. :func:`apply_defaults` fills absent (or non-nullable ``null``) fields from ``default``, then
   recurses, so defaults inside defaults apply (``pkg/apiserver/schema/defaulting/algorithm.go``).
4. :func:`validate` returns one :class:`FieldError` per violation with upstream's paths and texts,
   e.g. ``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
   "string"`` (kube-openapi ``pkg/validation/validate`` messages, mapped to field errors by
   ``kubeOpenAPIResultToFieldErrors``).

:func:`coerce` runs 1-3 on a copy. :func:`validate_structural` checks that a schema is structural
and well formed, as CRD validation does for ``apiextensions.k8s.io/v1``. Nothing here mutates its
input except the in-place steps 1-3, which say so.
"""

from __future__ import annotations

import base64
import copy
import functools
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api._errors import FieldError

__all__ = [
    "CoerceResult",
    "apply_defaults",
    "coerce",
    "drop_nulls",
    "prune",
    "validate",
    "validate_structural",
]

Schema = Mapping[str, Any]
_RESOURCE_KEYS = frozenset({"apiVersion", "kind", "metadata"})


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _preserves(schema: Schema | None) -> bool:
    return bool(schema and schema.get("x-kubernetes-preserve-unknown-fields"))


def _props(schema: Schema | None) -> Mapping[str, Any]:
    props = schema.get("properties") if schema else None
    return props if isinstance(props, Mapping) else {}


def _additional(schema: Schema | None) -> Schema | None:
    extra = schema.get("additionalProperties") if schema else None
    return extra if isinstance(extra, Mapping) else None


def _items(schema: Schema | None) -> Schema | None:
    items = schema.get("items") if schema else None
    return items if isinstance(items, Mapping) else None


# ---------------------------------------------------------------------------------------------
# Pruning, null dropping, defaulting (in place)


def prune(obj: Any, schema: Schema | None, *, resource_root: bool = True) -> list[str]:
    """Remove undeclared fields from ``obj`` in place; return their paths in document order."""
    unknown: list[str] = []
    _prune(obj, schema, "", unknown, embedded=resource_root)
    return unknown


def _prune(
    value: Any, schema: Schema | None, path: str, unknown: list[str], *, embedded: bool = False
) -> None:
    if schema is not None and _preserves(schema):
        _prune_known_only(value, schema, path, unknown)
        return
    if isinstance(value, dict):
        if schema is None:
            for key in list(value):
                unknown.append(_child(path, key))
                del value[key]
            return
        embedded = embedded or bool(schema.get("x-kubernetes-embedded-resource"))
        props, extra = _props(schema), _additional(schema)
        for key in list(value):
            if embedded and key in _RESOURCE_KEYS and key not in props:
                continue
            if key in props:
                _prune(value[key], props[key], _child(path, key), unknown)
            elif extra is not None:
                _prune(value[key], extra, _child(path, key), unknown)
            elif schema.get("additionalProperties") is True:
                continue
            else:
                unknown.append(_child(path, key))
                del value[key]
    elif isinstance(value, list):
        items = _items(schema)
        for i, item in enumerate(value):
            _prune(item, items, _index(path, i), unknown)


def _prune_known_only(value: Any, schema: Schema, path: str, unknown: list[str]) -> None:
    """Under preserve-unknown-fields: keep unknown keys, still prune inside declared ones."""
    if isinstance(value, dict):
        props, extra = _props(schema), _additional(schema)
        for key, item in value.items():
            sub = props.get(key) if key in props else extra
            if sub is not None:
                _prune(item, sub, _child(path, key), unknown)
    elif isinstance(value, list):
        items = _items(schema)
        if items is not None:
            for i, item in enumerate(value):
                _prune(item, items, _index(path, i), unknown)


def _nullable(schema: Schema | None) -> bool:
    return bool(schema and schema.get("nullable"))


def drop_nulls(value: Any, schema: Schema | None) -> None:
    """Remove, in place, ``null`` values of non-nullable fields that have no ``default``."""
    if schema is None:
        return
    if isinstance(value, dict):
        props, extra = _props(schema), _additional(schema)
        for key in list(value):
            sub = props.get(key) if key in props else extra
            if sub is None:
                continue
            if value[key] is None and not _nullable(sub) and "default" not in sub:
                del value[key]
            else:
                drop_nulls(value[key], sub)
    elif isinstance(value, list):
        items = _items(schema)
        for item in value:
            drop_nulls(item, items)


def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Fill absent and non-nullable ``null`` fields from ``default`` in place, then recurse."""
    if schema is None:
        return
    if isinstance(value, dict):
        props, extra = _props(schema), _additional(schema)
        for key, sub in props.items():
            absent = key not in value or (value[key] is None and not _nullable(sub))
            if absent and isinstance(sub, Mapping) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key in list(value):
            sub = props.get(key) if key in props else extra
            if sub is None:
                continue
            if value[key] is None and not _nullable(sub) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            else:
                apply_defaults(value[key], sub)
    elif isinstance(value, list):
        items = _items(schema)
        if items is None:
            return
        for i, item in enumerate(value):
            if item is None and not _nullable(items) and "default" in items:
                value[i] = copy.deepcopy(items["default"])
            else:
                apply_defaults(item, items)


@dataclass(frozen=True, slots=True)
class CoerceResult:
    """A pruned, null-cleaned, defaulted copy of an object, and the paths pruning removed."""

    object: dict[str, Any]
    unknown_fields: list[str]


def coerce(obj: Mapping[str, Any], schema: Schema) -> CoerceResult:
    """Upstream's decode path for a custom resource, on a deep copy: prune, drop nulls, default."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    if _preserves(schema) and not _props(schema):
        apply_defaults(result, schema)
        return CoerceResult(result, [])
    unknown = prune(result, schema)
    drop_nulls(result, schema)
    apply_defaults(result, schema)
    return CoerceResult(result, unknown)


# ---------------------------------------------------------------------------------------------
# Validation


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_number(value: float | int) -> str:
    """Go's ``%v`` of a float64 bound: ``10`` rather than ``10.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _declared_types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    declared = schema.get("type")
    if isinstance(declared, str) and declared:
        return [declared]
    if isinstance(declared, list):
        return [str(t) for t in declared]
    return []


def _type_ok(actual: str, value: Any, declared: list[str]) -> bool:
    if actual in declared:
        return True
    if actual == "number" and "integer" in declared and float(value).is_integer():
        return True
    return actual == "integer" and "number" in declared


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_DURATION = re.compile(r"^(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w)\s*)+$")


def _valid_ip(text: str, cls: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]) -> bool:
    try:
        cls(text)
    except ValueError:
        return False
    return True


def _format_ok(fmt: str, text: str) -> bool:
    """kube-openapi ``strfmt`` checks for the formats CRDs commonly use; unknown formats pass."""
    if fmt in ("date-time", "datetime"):
        return bool(_DATE_TIME.match(text))
    if fmt == "date":
        return bool(_DATE.match(text))
    if fmt == "byte":
        try:
            base64.b64decode(text, validate=True)
        except ValueError:
            return False
        return True
    if fmt in ("uuid", "uuid3", "uuid4", "uuid5"):
        return bool(_UUID.match(text))
    if fmt == "ipv4":
        return _valid_ip(text, ipaddress.IPv4Address)
    if fmt == "ipv6":
        return _valid_ip(text, ipaddress.IPv6Address)
    if fmt == "cidr":
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            return False
        return "/" in text
    if fmt == "mac":
        return bool(_MAC.match(text))
    if fmt == "duration":
        return bool(_DURATION.match(text))
    return True


def validate(obj: Any, schema: Schema, *, path: str = "") -> list[FieldError]:
    """Every violation of ``schema`` by ``obj``, with upstream's field paths and messages."""
    errors: list[FieldError] = []
    _validate(obj, schema, path, errors)
    return errors


def _validate(value: Any, schema: Schema, path: str, errors: list[FieldError]) -> None:
    declared = _declared_types(schema)
    actual = _type_name(value)
    if value is None:
        if declared and "null" not in declared and not _nullable(schema):
            errors.append(
                FieldError.type_invalid(
                    path, "null", _in_body(path, f'must be of type {",".join(declared)}: "null"')
                )
            )
        return
    if declared and not _type_ok(actual, value, declared):
        errors.append(
            FieldError.type_invalid(
                path, actual, _in_body(path, f'must be of type {",".join(declared)}: "{actual}"')
            )
        )
        _validate_enum(value, schema, path, errors)
        return
    for sub_schema in schema.get("allOf") or ():
        if isinstance(sub_schema, Mapping):
            _validate(value, sub_schema, path, errors)
    if isinstance(value, str):
        _validate_string(value, schema, path, errors)
    elif actual in ("integer", "number"):
        _validate_number(value, schema, path, errors)
    elif isinstance(value, list):
        _validate_array(value, schema, path, errors)
    _validate_enum(value, schema, path, errors)
    if isinstance(value, dict):
        _validate_object(value, schema, path, errors)


def _in_body(path: str, text: str) -> str:
    return f"{path} in body {text}"


def _validate_enum(value: Any, schema: Schema, path: str, errors: list[FieldError]) -> None:
    allowed = schema.get("enum")
    if not isinstance(allowed, list) or not allowed:
        return
    if any(_json_equal(value, candidate) for candidate in allowed):
        return
    shown = [c if isinstance(c, str) else _json_text(c) for c in allowed]
    errors.append(FieldError.not_supported(path, value, shown))


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _validate_string(value: str, schema: Schema, path: str, errors: list[FieldError]) -> None:
    max_length = schema.get("maxLength")
    if isinstance(max_length, int) and len(value) > max_length:
        errors.append(FieldError.too_long(path, max_length))
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(value) < min_length:
        errors.append(
            FieldError.invalid(path, value, _in_body(path, f"should be at least {min_length} chars long"))
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        compiled = _compiled(pattern)
        if compiled is not None and compiled.search(value) is None:
            errors.append(FieldError.invalid(path, value, _in_body(path, f"should match '{pattern}'")))
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt and not _format_ok(fmt, value):
        errors.append(
            FieldError.type_invalid(path, value, _in_body(path, f'must be of type {fmt}: "{value}"'))
        )


def _validate_number(value: float | int, schema: Schema, path: str, errors: list[FieldError]) -> None:
    maximum = schema.get("maximum")
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        if schema.get("exclusiveMaximum") and value >= maximum:
            errors.append(
                FieldError.invalid(path, value, _in_body(path, f"should be less than {_go_number(maximum)}"))
            )
        elif value > maximum:
            text = f"should be less than or equal to {_go_number(maximum)}"
            errors.append(FieldError.invalid(path, value, _in_body(path, text)))
    minimum = schema.get("minimum")
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        if schema.get("exclusiveMinimum") and value <= minimum:
            text = f"should be greater than {_go_number(minimum)}"
            errors.append(FieldError.invalid(path, value, _in_body(path, text)))
        elif value < minimum:
            text = f"should be greater than or equal to {_go_number(minimum)}"
            errors.append(FieldError.invalid(path, value, _in_body(path, text)))
    factor = schema.get("multipleOf")
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0:
        quotient = value / factor
        if abs(quotient - round(quotient)) > 1e-9:
            text = f"should be a multiple of {_go_number(factor)}"
            errors.append(FieldError.invalid(path, value, _in_body(path, text)))


def _validate_array(value: list[Any], schema: Schema, path: str, errors: list[FieldError]) -> None:
    max_items = schema.get("maxItems")
    if isinstance(max_items, int) and len(value) > max_items:
        errors.append(FieldError("too_many", path, f"{len(value)}: must have at most {max_items} items"))
    min_items = schema.get("minItems")
    if isinstance(min_items, int) and len(value) < min_items:
        errors.append(
            FieldError.invalid(path, len(value), _in_body(path, f"should have at least {min_items} items"))
        )
    items = _items(schema)
    if items is not None:
        for i, item in enumerate(value):
            _validate(item, items, _index(path, i), errors)
    _validate_list_type(value, schema, path, errors)


def _validate_list_type(value: list[Any], schema: Schema, path: str, errors: list[FieldError]) -> None:
    """``x-kubernetes-list-type`` set/map: no duplicate items / keys (``structurallisttype``)."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if any(_json_equal(item, s) for s in seen):
                errors.append(FieldError.duplicate(_index(path, i), item))
            else:
                seen.append(item)
    elif list_type == "map":
        keys = [k for k in schema.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
        seen_keys: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = _json_text([item.get(k) for k in keys])
            if key in seen_keys:
                errors.append(
                    FieldError.duplicate(_index(path, i), {k: item.get(k) for k in keys if k in item})
                )
            seen_keys.add(key)


def _validate_object(value: dict[str, Any], schema: Schema, path: str, errors: list[FieldError]) -> None:
    max_props = schema.get("maxProperties")
    if isinstance(max_props, int) and len(value) > max_props:
        errors.append(FieldError("too_many", path, f"{len(value)}: must have at most {max_props} items"))
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and len(value) < min_props:
        text = _in_body(path, f"should have at least {min_props} properties")
        errors.append(FieldError.invalid(path, len(value), text))
    for name in schema.get("required") or ():
        if isinstance(name, str) and name not in value:
            errors.append(FieldError.required(_child(path, name)))
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errors.append(FieldError.required(_child(path, key), "must not be empty"))
    props, extra = _props(schema), _additional(schema)
    for key, item in value.items():
        sub = props.get(key) if key in props else extra
        if isinstance(sub, Mapping):
            _validate(item, sub, _child(path, key), errors)


# ---------------------------------------------------------------------------------------------
# Structural schema check (CRD validation, apiextensions.k8s.io/v1)

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_FORBIDDEN = (
    "$ref",
    "uniqueItems",
    "additionalItems",
    "patternProperties",
    "dependencies",
    "definitions",
    "id",
    "$schema",
)


def validate_structural(schema: Any, path: str) -> list[FieldError]:
    """Why ``schema`` is not a structural schema CRD v1 accepts (empty list when it is).

    Checks the rules that matter for serving (k/k ``pkg/apiserver/schema/validation.go``): a type
    on every node that is not int-or-string or preserve-unknown-fields, an ``object`` root,
    ``properties`` and ``additionalProperties`` not both set, no ``additionalProperties: false``,
    ``items`` on arrays, and no forbidden keywords.
    """
    errors: list[FieldError] = []
    if not isinstance(schema, Mapping):
        errors.append(FieldError.required(path, "must not be empty"))
        return errors
    root_type = schema.get("type")
    if root_type != "object":
        if not root_type:
            errors.append(FieldError.required(_child(path, "type"), "must not be empty at the root"))
        else:
            errors.append(FieldError.invalid(_child(path, "type"), root_type, "must be object at the root"))
    _structural(schema, path, errors, root=True)
    return errors


def _structural(
    schema: Mapping[str, Any], path: str, errors: list[FieldError], *, root: bool = False
) -> None:
    declared = schema.get("type")
    special = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if declared is not None and (not isinstance(declared, str) or (declared and declared not in _TYPES)):
        errors.append(FieldError.not_supported(_child(path, "type"), declared, sorted(_TYPES)))
    elif not declared and not special and not root:
        errors.append(
            FieldError.required(_child(path, "type"), "must not be empty for specified object fields")
        )
    for key in _FORBIDDEN:
        if key in schema:
            errors.append(
                FieldError.forbidden(_child(path, key), f"{key} is forbidden in structural schemas")
            )
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    if extra is False:
        errors.append(FieldError.forbidden(_child(path, "additionalProperties"), "must not be false"))
    if isinstance(props, Mapping) and props and isinstance(extra, Mapping):
        errors.append(
            FieldError.forbidden(
                _child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                _structural(sub, f"{path}.properties[{name}]", errors)
    if isinstance(extra, Mapping):
        _structural(extra, _child(path, "additionalProperties"), errors)
    items = schema.get("items")
    if declared == "array" and not isinstance(items, Mapping):
        errors.append(FieldError.required(_child(path, "items"), "must be specified"))
    if isinstance(items, Mapping):
        _structural(items, _child(path, "items"), errors)
    for combinator in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(combinator) or ()):
            if isinstance(sub, Mapping) and ("default" in sub or "nullable" in sub or "description" in sub):
                errors.append(
                    FieldError.forbidden(
                        _index(_child(path, combinator), i), "must not be set inside logical junctors"
                    )
                )
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and _compiled(pattern) is None:
        errors.append(
            FieldError.invalid(_child(path, "pattern"), pattern, "must be a valid regular expression")
        )
