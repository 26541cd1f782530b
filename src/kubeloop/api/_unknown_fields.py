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

__all__ = ["PrunePlan", "duplicate_fields", "prune_builtin_unknown_fields", "prune_plan", "prune_planned", "undeclared_fields"]

def _resolve(node: Mapping[str, Any]) -> dict[str, Any]:
    return resolve(node) or {}  # memoised by identity in _schemas


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune_builtin_unknown_fields(obj: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """Drop undeclared fields of ``obj`` (in place) against built-in ``schema``; return their paths."""
    unknown: list[str] = []
    if schema is not None and (plan := _plan(schema)) is not None:
        _walk(obj, plan, "", unknown, True, _index_element)
    return unknown


def prune_plan(schema: Mapping[str, Any] | None) -> PrunePlan | None:
    """What :func:`prune_planned` needs of ``schema``; ``None`` when nothing can be unknown under it."""
    return None if schema is None else _plan(schema)


def prune_planned(obj: Any, plan: PrunePlan) -> list[str]:
    """:func:`prune_builtin_unknown_fields` with the schema's plan already looked up (by a caller
    that remembers it per kind: a write's lookups cost about as much as its walk)."""
    unknown: list[str] = []
    _walk(obj, plan, "", unknown, True, _index_element)
    return unknown


def undeclared_fields(obj: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """Paths of ``obj``'s undeclared fields in structured-merge-diff form, without changing ``obj``.

    Server-side apply types the applied configuration against the schema and rejects such fields
    (``.spec.foo: field not declared in schema``); list items of associative lists are named by
    their keys, as smd prints them (``.spec.template.spec.containers[name="c"].foo``).
    """
    unknown: list[str] = []
    if schema is not None and (plan := _plan(schema)) is not None:
        _walk(obj, plan, "", unknown, False, _smd_element)
    return ["." + p for p in unknown]


def _index_element(item: Any, i: int, schema: Mapping[str, Any]) -> str:
    return f"[{i}]"


def _smd_element(item: Any, i: int, schema: Mapping[str, Any]) -> str:
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") == "map" and isinstance(keys, list) and isinstance(item, dict):
        return "[" + ",".join(f"{k}={json.dumps(item.get(k), separators=(',', ':'))}" for k in keys) + "]"
    return f"[{i}]"


def _walk(
    value: Any, plan: PrunePlan, path: str, unknown: list[str], mutate: bool,
    element: Callable[[Any, int, Mapping[str, Any]], str],
) -> None:
    if isinstance(value, dict):
        props, extra = plan.props, plan.extra
        if props is not None:
            drop: list[str] | None = None
            kids = plan.kids
            for key, item in value.items():
                below = kids.get(key, _UNSEEN)
                if below is _UNSEEN:
                    sub = props.get(key)
                    if sub is None:
                        if extra is None:
                            unknown.append(_child(path, key))
                            if drop is None:
                                drop = []
                            drop.append(key)
                            continue
                        below = _plan(extra)
                    else:
                        below = kids[key] = _plan(sub)  # declared keys only: bounded by the schema
                # A child whose fields are all declared with nothing below them (``metadata`` of
                # most writes) is settled here: a set comparison in C costs less than a call.
                if below is not None and isinstance(item, (dict, list)) and not (
                        type(item) is dict and item.keys() <= below.leaves):
                    _walk(item, below, _child(path, key), unknown, mutate, element)
            if mutate and drop:
                for key in drop:
                    del value[key]
        elif extra is not None:
            below = _plan(extra)
            if below is not None:
                for key, item in value.items():
                    if isinstance(item, (dict, list)):
                        _walk(item, below, _child(path, key), unknown, mutate, element)
    elif isinstance(value, list) and plan.items is not None:
        below = _plan(plan.items)
        if below is not None:
            schema = plan.schema
            for i, item in enumerate(value):
                if isinstance(item, (dict, list)):
                    _walk(item, below, path + element(item, i, schema), unknown, mutate, element)


_UNSEEN: Any = object()


class PrunePlan:
    """What :func:`_walk` needs of one schema node: its resolved form, declared properties,
    ``additionalProperties`` and ``items`` (each ``None`` when absent or not a schema), and the
    plans of its declared properties (``kids``)."""

    __slots__ = ("extra", "items", "kids", "leaves", "props", "schema")

    def __init__(self, node: Mapping[str, Any]) -> None:
        # The plans of the declared properties met so far (filled as :func:`_walk` meets them;
        # not eagerly, since schemas are recursive).
        self.kids: dict[str, PrunePlan | None] = {}
        self.schema = _resolve(node)
        props, extra, items = self.schema.get("properties"), self.schema.get("additionalProperties"), self.schema.get("items")
        self.props: dict[str, Any] | None = props if isinstance(props, dict) else None
        self.extra: dict[str, Any] | None = extra if isinstance(extra, dict) else None
        self.items: dict[str, Any] | None = items if isinstance(items, dict) else None
        # The declared properties under which nothing can be unknown, whatever their value.
        self.leaves = frozenset(
            key for key, sub in (self.props or {}).items() if isinstance(sub, Mapping) and _holds_nothing(sub))


# Plans by node identity, ``None`` for a node under which nothing can be unknown (no declared
# properties anywhere below it: string maps such as labels and ConfigMap data, free-form values);
# the node is kept in the value so that an id reused after garbage collection is never mistaken for it.
_plans: dict[int, tuple[Mapping[str, Any], PrunePlan | None]] = {}


def _plan(node: Mapping[str, Any]) -> PrunePlan | None:
    hit = _plans.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    plan = None if _holds_nothing(node) else PrunePlan(node)
    if len(_plans) > 100_000:  # CRD schemas come and go; never grow without bound
        _plans.clear()
    _plans[id(node)] = (node, plan)
    return plan


def _holds_nothing(node: Mapping[str, Any]) -> bool:
    """Whether no value can hold an unknown field under ``node``: it declares no properties, and
    what its maps and lists hold declares nothing (string maps such as labels and ConfigMap data,
    free-form values)."""
    schema = _resolve(node)
    if isinstance(schema.get("properties"), dict):
        return False
    return all(not isinstance(below, dict) or _is_leaf(below)
               for below in (schema.get("additionalProperties"), schema.get("items")))


def _is_leaf(node: Mapping[str, Any]) -> bool:
    schema = _resolve(node)
    return not any(isinstance(schema.get(k), dict) for k in ("properties", "additionalProperties", "items"))


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
