"""A CRD version's ``openAPIV3Schema`` cut down to what OpenAPI v2 (and kubectl reading it) can hold.

Upstream publishes custom kinds in ``/openapi/v2`` through ``ToStructuralOpenAPIV2``
(apiextensions-apiserver ``pkg/controller/openapi/v2/conversion.go``), applied to every node, the
node itself before its children:

- ``allOf``, ``oneOf``, ``anyOf`` and ``not`` are dropped;
- a ``nullable`` node loses ``nullable``, ``type``, ``items`` and ``properties`` (untyped values
  with fields break kubectl);
- an ``x-kubernetes-preserve-unknown-fields`` node loses ``items`` and ``properties``, and its
  ``type`` too when that is ``object``;
- an ``array`` left without ``items`` loses its ``type``;
- a property that is ``nullable`` is no longer ``required``; a node whose ``additionalProperties``
  is ``nullable`` loses its whole ``required`` list.

Everything else (descriptions, formats, bounds, ``x-kubernetes-*`` markers) is kept. The result is
a new tree; the input is never modified.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["to_openapi_v2"]

_JUNCTORS = frozenset({"allOf", "oneOf", "anyOf", "not"})


def to_openapi_v2(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in schema.items() if key not in _JUNCTORS}
    if out.pop("nullable", False):
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if out.get("x-kubernetes-preserve-unknown-fields") is True:
        out.pop("items", None)
        out.pop("properties", None)
        if out.get("type") == "object":
            del out["type"]
    if out.get("type") == "array" and "items" not in out:
        del out["type"]
    properties = out.get("properties")
    if isinstance(properties, Mapping):
        nullable = {name for name, sub in properties.items() if isinstance(sub, Mapping) and sub.get("nullable")}
        required = out.get("required")
        if nullable and isinstance(required, list):
            kept = [name for name in required if name not in nullable]
            if kept:
                out["required"] = kept
            else:
                del out["required"]
        out["properties"] = {
            name: to_openapi_v2(sub) if isinstance(sub, Mapping) else sub for name, sub in properties.items()
        }
    additional = out.get("additionalProperties")
    if isinstance(additional, Mapping):
        if additional.get("nullable"):
            out.pop("required", None)
        out["additionalProperties"] = to_openapi_v2(additional)
    items = out.get("items")
    if isinstance(items, Mapping):
        out["items"] = to_openapi_v2(items)
    elif isinstance(items, list):
        out["items"] = [to_openapi_v2(sub) if isinstance(sub, Mapping) else sub for sub in items]
    return out
