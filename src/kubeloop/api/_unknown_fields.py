"""Unknown and duplicate fields of built-in objects, as upstream's strict JSON decoding reports them.

Upstream decodes a built-in object into its Go struct, which silently drops every field the struct
does not declare; with ``fieldValidation=Strict`` or ``Warn`` the decoder (``sigs.k8s.io/json``
``UnmarshalStrict``, apimachinery ``runtime/serializer/json``) also reports them, as
``unknown field "spec.foo"``, and reports repeated object keys as ``duplicate field "spec.replicas"``.
The server turns those texts into a 400/422 (Strict) or ``Warning`` headers (Warn).

- :func:`prune_builtin_unknown_fields` removes, in place, every field the built-in schema (from
  :mod:`kubeloop.api._schemas`) does not declare and returns the removed paths in document order
  (``spec.template.spec.containers[0].foo``). Free-form nodes (``RawExtension``, ``FieldsV1``,
  ``JSON``, int-or-string, quantities) are not descended into. A ``None`` schema removes nothing.
- :func:`duplicate_fields` parses a JSON document and returns the paths of repeated keys
  (``spec.replicas``), the last value winning as in Go; it is only run when the directive asks
  for it, because it costs a second, slower parse.

Schemas are the shared, read-only definitions (``_schemas.resolve`` memoises ``$ref`` nodes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api._schemas import resolve

__all__ = ["duplicate_fields", "prune_builtin_unknown_fields", "undeclared_fields"]

def _resolve(node: Mapping[str, Any]) -> dict[str, Any]:
    return resolve(node) or {}  # memoised by identity in _schemas


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune_builtin_unknown_fields(obj: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """Drop undeclared fields of ``obj`` (in place) against built-in ``schema``; return their paths."""
    unknown: list[str] = []
    if schema is not None:
        _prune(obj, schema, "", unknown, True, _index_element)
    return unknown


def undeclared_fields(obj: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """Paths of ``obj``'s undeclared fields in structured-merge-diff form, without changing ``obj``.

    Server-side apply types the applied configuration against the schema and rejects such fields
    (``.spec.foo: field not declared in schema``); list items of associative lists are named by
    their keys, as smd prints them (``.spec.template.spec.containers[name="c"].foo``).
    """
    unknown: list[str] = []
    if schema is not None:
        _prune(obj, schema, "", unknown, False, _smd_element)
    return ["." + p for p in unknown]


def _index_element(item: Any, i: int, schema: Mapping[str, Any]) -> str:
    return f"[{i}]"


def _smd_element(item: Any, i: int, schema: Mapping[str, Any]) -> str:
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") == "map" and isinstance(keys, list) and isinstance(item, dict):
        return "[" + ",".join(f"{k}={json.dumps(item.get(k), separators=(',', ':'))}" for k in keys) + "]"
    return f"[{i}]"


def _prune(
    value: Any, node: Mapping[str, Any], path: str, unknown: list[str], mutate: bool,
    element: Callable[[Any, int, Mapping[str, Any]], str],
) -> None:
    schema, props, extra, items = _parts(node)
    if isinstance(value, dict):
        if props is not None:
            drop: list[str] = []
            for key, item in value.items():
                sub = props.get(key)
                if sub is not None:
                    if isinstance(item, (dict, list)):
                        _prune(item, sub, _child(path, key), unknown, mutate, element)
                elif extra is not None:
                    if isinstance(item, (dict, list)):
                        _prune(item, extra, _child(path, key), unknown, mutate, element)
                else:
                    unknown.append(_child(path, key))
                    drop.append(key)
            if mutate:
                for key in drop:
                    del value[key]
        elif extra is not None:
            for key, item in value.items():
                if isinstance(item, (dict, list)):
                    _prune(item, extra, _child(path, key), unknown, mutate, element)
    elif isinstance(value, list) and items is not None:
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _prune(item, items, path + element(item, i, schema), unknown, mutate, element)


_Parts = tuple[dict[str, Any], "dict[str, Any] | None", "dict[str, Any] | None", "dict[str, Any] | None"]
# (resolved schema, properties, additionalProperties, items) by node identity, the node kept in
# the value so that an id reused after garbage collection is never mistaken for it.
_parts_memo: dict[int, tuple[Mapping[str, Any], _Parts]] = {}


def _parts(node: Mapping[str, Any]) -> _Parts:
    hit = _parts_memo.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    schema = _resolve(node)
    props, extra, items = schema.get("properties"), schema.get("additionalProperties"), schema.get("items")
    parts: _Parts = (
        schema,
        props if isinstance(props, dict) else None,
        extra if isinstance(extra, dict) else None,
        items if isinstance(items, dict) else None,
    )
    if len(_parts_memo) > 100_000:  # CRD schemas come and go; never grow without bound
        _parts_memo.clear()
    _parts_memo[id(node)] = (node, parts)
    return parts


class _Pairs(dict[str, Any]):
    """An object parsed by :func:`duplicate_fields` that remembers which of its keys repeated."""

    __slots__ = ("repeated",)
    repeated: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _Pairs(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        out.repeated = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return out


def duplicate_fields(body: bytes | str) -> list[str]:
    """Paths of the keys that appear more than once in one JSON object of ``body`` (valid JSON)."""
    try:
        doc = json.loads(body, object_pairs_hook=_pairs_hook)
    except ValueError:
        return []
    found: list[str] = []
    _collect(doc, "", found)
    return found


def _collect(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        for key in getattr(value, "repeated", ()):
            found.append(_child(path, key))
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                _collect(item, _child(path, key), found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _collect(item, f"{path}[{i}]", found)
