"""Built-in JSON schemas of Kubernetes 1.32, read at run time from the ``kubernetes-validate`` package.

Upstream's schemas are not copied into kubeloop (DESIGN "Upstream material"): this module locates
``kubernetes_validate/kubernetes-json-schema/v1.32.0-local/_definitions.json`` inside the installed
package (without importing it, which would pull in ``jsonschema``), parses it once on first use and
caches it. Importing this module reads no file, so start-up stays cheap.

The definitions are JSON Schema (draft 2020-12) converted from upstream's OpenAPI: every named
definition lives under ``$defs`` and references look like ``{"$ref": "#/$defs/<name>"}``, often with
sibling keys (``description``, ``x-kubernetes-patch-strategy``) next to the ``$ref``. Optional fields
are typed ``["string", "null"]``. The markers strategic merge patch and server-side apply rely on are
kept verbatim: ``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``,
``x-kubernetes-patch-merge-key``, ``x-kubernetes-patch-strategy``.

Guarantees:

- :func:`builtin_schema` and :func:`definitions` return the cached, shared dicts: callers must not
  mutate them.
- :func:`resolve` follows ``$ref`` chains and overlays the referring node's sibling keys, so a
  property's own ``x-kubernetes-patch-strategy`` or ``description`` wins over the definition's.
  Results are memoised per node: callers must not mutate what it returns.
- :func:`property_schema` and :func:`items_schema` walk one level down any schema (built-in or a
  CRD's ``openAPIV3Schema``, which carries the same markers inline), resolving references.
- A missing or unreadable package makes the lookups return ``None`` / an empty mapping, never raise.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "KUBERNETES_SCHEMA_VERSION",
    "builtin_schema",
    "definition_name_for",
    "definitions",
    "items_schema",
    "property_schema",
    "ref_name",
    "resolve",
]

KUBERNETES_SCHEMA_VERSION = "1.32"
_PACKAGE = "kubernetes_validate"
_REF_PREFIX = "#/$defs/"
_VERSION_DIR = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local$")

_lock = threading.Lock()
_definitions: dict[str, dict[str, Any]] | None = None
_by_gvk: dict[tuple[str, str, str], str] = {}


def _definitions_file() -> str | None:
    """Path of the 1.32 ``_definitions.json`` (the newest version shipped if 1.32 is absent)."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = os.path.join(next(iter(spec.submodule_search_locations)), "kubernetes-json-schema")
    try:
        entries = os.listdir(root)
    except OSError:
        return None
    versions: list[tuple[tuple[int, int, int], str]] = []
    for entry in entries:
        match = _VERSION_DIR.match(entry)
        if match:
            versions.append(((int(match[1]), int(match[2]), int(match[3])), entry))
    if not versions:
        return None
    wanted = tuple(int(p) for p in KUBERNETES_SCHEMA_VERSION.split("."))
    exact = [entry for version, entry in versions if version[:2] == wanted]
    chosen = exact[0] if exact else max(versions)[1]
    return os.path.join(root, chosen, "_definitions.json")


def _load() -> dict[str, dict[str, Any]]:
    global _definitions
    if _definitions is not None:
        return _definitions
    with _lock:
        if _definitions is not None:
            return _definitions
        loaded: dict[str, dict[str, Any]] = {}
        path = _definitions_file()
        if path is not None:
            try:
                with open(path, "rb") as handle:
                    document = orjson.loads(handle.read())
            except (OSError, orjson.JSONDecodeError):
                document = {}
            defs = document.get("$defs") if isinstance(document, dict) else None
            if isinstance(defs, dict):
                loaded = {name: node for name, node in defs.items() if isinstance(node, dict)}
        for name, node in loaded.items():
            for gvk in node.get("x-kubernetes-group-version-kind") or ():
                if isinstance(gvk, dict):
                    key = (str(gvk.get("group", "")), str(gvk.get("version", "")), str(gvk.get("kind", "")))
                    _by_gvk.setdefault(key, name)
        _definitions = loaded
        return loaded


def definitions() -> Mapping[str, dict[str, Any]]:
    """All named definitions (``io.k8s.api.core.v1.ConfigMap`` ...), refs in ``#/$defs/<name>`` form."""
    return _load()


def definition_name_for(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind (``("apps", "v1", "Deployment")`` -> ``io.k8s.api.apps.v1.Deployment``)."""
    _load()
    return _by_gvk.get((group, version, kind))


def builtin_schema(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """The JSON schema of a built-in kind, or ``None`` for kinds upstream 1.32 does not define."""
    key = (group, version, kind)
    try:
        return _by_kind[key]  # every write asks, for one of a few dozen kinds
    except KeyError:
        pass
    name = definition_name_for(group, version, kind)
    schema = None if name is None else _load().get(name)
    if len(_by_kind) > 10_000:  # the keys come from request URLs and bodies: never grow without bound
        _by_kind.clear()
    _by_kind[key] = schema
    return schema


# builtin_schema's answers (the definitions never change once loaded).
_by_kind: dict[tuple[str, str, str], dict[str, Any] | None] = {}


def ref_name(ref: str) -> str:
    """``#/$defs/io.k8s.api.core.v1.Pod`` -> ``io.k8s.api.core.v1.Pod`` (other forms: the last segment)."""
    if ref.startswith(_REF_PREFIX):
        return ref[len(_REF_PREFIX) :]
    return ref.rsplit("/", 1)[-1]


# Resolved ``$ref`` nodes by identity (schemas are shared and never mutated); the node is kept
# alongside so that an id reused after garbage collection is never mistaken for it.
_resolved: dict[int, tuple[Mapping[str, Any], dict[str, Any]]] = {}


def resolve(node: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``node`` with its ``$ref`` (chain) replaced by the definition; the node's own keys win."""
    if node is None:
        return None
    if "$ref" not in node:
        return node if isinstance(node, dict) else dict(node)
    hit = _resolved.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    merged = _resolve_ref(node)
    if len(_resolved) > 100_000:  # CRD schemas come and go; never grow without bound
        _resolved.clear()
    _resolved[id(node)] = (node, merged)
    return merged


def _resolve_ref(node: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    layers: list[Mapping[str, Any]] = []
    current: Mapping[str, Any] | None = node
    seen: set[str] = set()
    while current is not None:
        layers.append(current)
        ref = current.get("$ref")
        if not isinstance(ref, str) or ref in seen:
            break
        seen.add(ref)
        current = _load().get(ref_name(ref))
    for layer in reversed(layers):
        merged.update(layer)
    merged.pop("$ref", None)
    return merged


def property_schema(node: Mapping[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The schema of field or map key ``name`` inside object schema ``node`` (``None`` if unknown)."""
    resolved = resolve(node)
    if resolved is None:
        return None
    properties = resolved.get("properties")
    if isinstance(properties, dict) and name in properties:
        return resolve(properties[name])
    additional = resolved.get("additionalProperties")
    if isinstance(additional, dict):
        return resolve(additional)
    return None


def items_schema(node: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema of the items of array schema ``node`` (``None`` if unknown)."""
    resolved = resolve(node)
    if resolved is None:
        return None
    items = resolved.get("items")
    return resolve(items) if isinstance(items, dict) else None
