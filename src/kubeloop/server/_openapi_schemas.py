"""OpenAPI v3 ``components/schemas`` for served kinds: built-ins from upstream 1.32, CRs from their CRD.

Built-in definitions come from :mod:`kubeloop.api._schemas` (upstream's JSON schemas as shipped by
``kubernetes-validate``) and are rewritten into the shape upstream's ``/openapi/v3`` documents use:

- ``{"$ref": X, "description": ...}`` becomes ``{"allOf": [{"$ref": X}], "description": ...}``
  (OpenAPI 3.0 ignores siblings of ``$ref``; upstream wraps them the same way since 1.27), and
  references point at ``#/components/schemas/<name>``;
- JSON-schema ``"type": [T, "null"]`` becomes ``"type": T``; ``IntOrString`` is
  ``{"type": "string", "format": "int-or-string"}`` and ``Quantity`` ``{"type": "string"}``, as in
  upstream's published specs; the ``enum`` the package adds on ``apiVersion``/``kind`` is dropped;
- ``x-kubernetes-group-version-kind`` and the list/map/patch markers are kept verbatim
  (kubectl's field-validation check and ``kubectl explain`` find schemas by the former).

A custom resource's schema is its version's ``openAPIV3Schema`` plus ``apiVersion``, ``kind`` and
``metadata`` (a reference to ObjectMeta), named ``<reversed group>.<version>.<Kind>`` like upstream
(``com.example.stable.v1.CronTab``), with a matching ``...List``. Every builder returns new dicts.

The same set serves the ``definitions`` of the swagger 2.0 ``/openapi/v2`` document
(``ComponentSet(swagger2=True)``): references are ``#/definitions/<name>`` and keep their siblings
(swagger 2.0 has no ``allOf`` wrapping in upstream's ``swagger.json``), and custom schemas first go
through :func:`~kubeloop.server._openapi_v2_crd.to_openapi_v2`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.api._schemas import definition_name_for, definitions, ref_name
from kubeloop.server._openapi_v2_crd import to_openapi_v2

__all__ = ["DEFINITIONS", "META", "ComponentSet", "custom_definition_name"]

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_COMPONENTS = "#/components/schemas/"
DEFINITIONS = "#/definitions/"
_SCALARS: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
}


def custom_definition_name(group: str, version: str, kind: str) -> str:
    """``stable.example.com`` ``v1`` ``CronTab`` -> ``com.example.stable.v1.CronTab``."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _ref(name: str, prefix: str = _COMPONENTS) -> dict[str, Any]:
    return {"$ref": prefix + name}


def _convert(node: Any, refs: set[str], *, property_name: str = "", prefix: str = _COMPONENTS) -> Any:
    """One JSON-schema node in OpenAPI 3.0 form (or swagger 2.0 when ``prefix`` is ``#/definitions/``);
    names of referenced definitions go into ``refs``."""
    if isinstance(node, list):
        return [_convert(item, refs, prefix=prefix) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$schema":
            continue
        if key == "type" and isinstance(value, list):
            concrete = [t for t in value if t != "null"]
            if concrete:
                out["type"] = concrete[0]
            continue
        if key == "enum" and property_name in ("apiVersion", "kind"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: _convert(sub, refs, property_name=name, prefix=prefix) for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties", "not") or key in ("allOf", "anyOf", "oneOf"):
            out[key] = _convert(value, refs, prefix=prefix)
        else:
            out[key] = copy.deepcopy(value)
    ref = out.pop("$ref", None)
    if isinstance(ref, str):
        name = ref_name(ref)
        refs.add(name)
        if prefix == DEFINITIONS:
            out["$ref"] = prefix + name  # swagger 2.0 keeps a reference's siblings (its description)
        elif out:
            out["allOf"] = [_ref(name)]
        else:
            out = _ref(name)
    return out


class ComponentSet:
    """The ``components/schemas`` of one document: definitions added with their whole closure.

    With ``swagger2=True`` it is the ``definitions`` of a swagger 2.0 document instead: references
    are ``#/definitions/<name>`` with their siblings beside them, and a custom schema is first made
    what OpenAPI v2 can hold (:func:`~kubeloop.server._openapi_v2_crd.to_openapi_v2`).
    """

    def __init__(self, *, swagger2: bool = False) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self._prefix = DEFINITIONS if swagger2 else _COMPONENTS

    def add_builtin(self, name: str) -> None:
        pending = [name]
        library = definitions()
        while pending:
            current = pending.pop()
            if current in self.schemas:
                continue
            if current in _SCALARS:
                source = library.get(current, {})
                scalar = dict(_SCALARS[current])
                if isinstance(source.get("description"), str):
                    scalar["description"] = source["description"]
                self.schemas[current] = scalar
                continue
            node = library.get(current)
            if node is None:
                self.schemas[current] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                continue
            refs: set[str] = set()
            self.schemas[current] = _convert(node, refs, prefix=self._prefix)
            pending.extend(sorted(refs - self.schemas.keys()))

    def add_kind(self, info: ResourceInfo, custom_schema: Mapping[str, Any] | None) -> str:
        """Add the kind (and its list kind); return the name its operations reference."""
        if not info.custom:
            name = definition_name_for(info.group, info.version, info.kind)
            if name is not None:
                self.add_builtin(name)
                list_name = definition_name_for(info.group, info.version, info.list_kind)
                if list_name is not None:
                    self.add_builtin(list_name)
                return name
        return self._add_custom(info, custom_schema)

    def _add_custom(self, info: ResourceInfo, custom_schema: Mapping[str, Any] | None) -> str:
        name = custom_definition_name(info.group, info.version, info.kind)
        refs: set[str] = set()
        if custom_schema and self._prefix == DEFINITIONS:
            custom_schema = to_openapi_v2(custom_schema)
        schema: dict[str, Any] = (
            _convert(custom_schema, refs, prefix=self._prefix)
            if custom_schema
            else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
        props = dict(schema.get("properties") or {})
        props["apiVersion"] = {
            "description": "APIVersion defines the versioned schema of this representation of an object. "
            "Servers should convert recognized schemas to the latest internal value, and may reject "
            "unrecognized values.",
            "type": "string",
        }
        props["kind"] = {
            "description": "Kind is a string value representing the REST resource this object represents. "
            "Servers may infer this from the endpoint the client submits requests to. In CamelCase.",
            "type": "string",
        }
        props["metadata"] = self._described_ref("Standard object's metadata.", f"{META}.ObjectMeta")
        schema["properties"] = props
        schema.setdefault("type", "object")
        schema["x-kubernetes-group-version-kind"] = [
            {"group": info.group, "kind": info.kind, "version": info.version}
        ]
        self.schemas[name] = schema
        # Upstream's CRD OpenAPI builder names and describes the list schema by ``names.listKind``
        # (apiextensions-apiserver ``pkg/controller/openapi/builder``: ``sampleList``, ``buildListSchema``).
        self.schemas[custom_definition_name(info.group, info.version, info.list_kind)] = {
            "description": f"{info.list_kind} is a list of {info.kind}",
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": props["apiVersion"],
                "items": {
                    "description": f"List of {info.plural}.",
                    "type": "array",
                    "items": _ref(name, self._prefix),
                },
                "kind": props["kind"],
                "metadata": self._described_ref("Standard list metadata.", f"{META}.ListMeta"),
            },
            "x-kubernetes-group-version-kind": [
                {"group": info.group, "kind": info.list_kind, "version": info.version}
            ],
        }
        for dependency in [*sorted(refs), f"{META}.ObjectMeta", f"{META}.ListMeta"]:
            self.add_builtin(dependency)
        return name

    def _described_ref(self, description: str, name: str) -> dict[str, Any]:
        if self._prefix == DEFINITIONS:
            return {"description": description, "$ref": DEFINITIONS + name}
        return {"description": description, "allOf": [_ref(name)]}

    def add_all(self, names: Iterable[str]) -> None:
        for name in names:
            self.add_builtin(name)
