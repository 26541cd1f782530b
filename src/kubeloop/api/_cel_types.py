"""CEL types as the checker (:mod:`kubeloop.api._cel_check`) sees them, and the type of a schema node.

:class:`CelType` is a name with parameters: ``int``, ``string``, ``list(A)``, ``map(K, V)``,
``optional_type(A)``, the Kubernetes library types (``kubernetes.URL``, ``kubernetes.Quantity``,
``net.IP``, ``net.CIDR``, ``kubernetes.NamedFormat``), ``dyn`` (anything: the checker never reports an
error against it) and ``object``, a schema's object, whose fields are read from the schema on demand.
:meth:`CelType.text` prints a type as cel-go's messages do (``google.protobuf.Duration``, ``map(string, int)``).

:func:`schema_type` follows apiserver's ``SchemaDeclType`` (k8s.io/apiserver ``pkg/cel/common/schemas.go``):
``x-kubernetes-int-or-string`` is dyn; at a resource root (the CRD's, or an
``x-kubernetes-embedded-resource``) ``apiVersion``, ``kind``, ``metadata.name`` and ``metadata.generateName``
are declared; an array is a list of its items' type; an object with ``additionalProperties`` a map from
string; an object with properties an object of those fields; a string is ``bytes``, ``duration`` or
``timestamp`` by its format (``byte``, ``duration``, ``date``/``date-time``), else ``string``; boolean,
number and integer are bool, double and int. Where kubeloop is less sure than upstream it says dyn, so no
rule gets an error upstream would not give: a field of an object with ``x-kubernetes-preserve-unknown-fields``
or without declared properties is dyn, not ``undefined field`` (upstream exposes only declared fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api._cel_values import unescape

__all__ = ["BOOL", "BYTES", "DOUBLE", "DURATION", "DYN", "INT", "NULL", "STRING", "TIMESTAMP", "TYPE", "UINT",
           "CelType", "field_type", "list_of", "map_of", "optional_of", "schema_type", "simple"]

Schema = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CelType:
    """A CEL type: ``name`` and ``params``; for ``object``, the schema, whether it is a resource root, and
    the name upstream would give it (``selfType.spec``, as apiserver's ``MaybeAssignTypeName``)."""

    name: str
    params: tuple[CelType, ...] = ()
    schema: Schema | None = field(default=None, compare=False)
    root: bool = field(default=False, compare=False)
    path: str = ""

    def text(self) -> str:
        """The type as cel-go's ``FormatCELType`` prints it."""
        if self.name == "object":
            return self.path or "object"
        if self.name == "duration":
            return "google.protobuf.Duration"
        if self.name == "timestamp":
            return "google.protobuf.Timestamp"
        if self.params:
            return f"{self.name}({', '.join(p.text() for p in self.params)})"
        return self.name


def simple(name: str) -> CelType:
    return CelType(name)


INT, UINT, DOUBLE, BOOL, STRING, BYTES = simple("int"), simple("uint"), simple("double"), simple("bool"), \
    simple("string"), simple("bytes")
NULL, DYN, TYPE, DURATION, TIMESTAMP = simple("null_type"), simple("dyn"), simple("type"), simple("duration"), \
    simple("timestamp")


def list_of(element: CelType) -> CelType:
    return CelType("list", (element,))


def map_of(key: CelType, value: CelType) -> CelType:
    return CelType("map", (key, value))


def optional_of(value: CelType) -> CelType:
    return CelType("optional_type", (value,))


_STRING_FORMATS = {"byte": BYTES, "duration": DURATION, "date": TIMESTAMP, "date-time": TIMESTAMP}
_META: Schema = {"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}


def schema_type(schema: Any, *, root: bool, path: str = "selfType") -> CelType:
    """The CEL type of a value of ``schema`` (dyn where the schema does not say enough)."""
    if not isinstance(schema, Mapping) or schema.get("x-kubernetes-int-or-string"):
        return DYN
    root = root or bool(schema.get("x-kubernetes-embedded-resource"))
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return list_of(schema_type(items, root=False, path=path + ".@idx")) if isinstance(items, Mapping) else DYN
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return map_of(STRING, schema_type(extra, root=False, path=path + ".@elem"))
        return CelType("object", schema=schema, root=root, path=path)
    if kind == "string":
        return _STRING_FORMATS.get(str(schema.get("format") or ""), STRING)
    return {"boolean": BOOL, "number": DOUBLE, "integer": INT}.get(str(kind), DYN)


def _metadata(schema: Schema) -> Schema:
    """apiserver's ``WithTypeAndObjectMeta``: the schema's own metadata when it declares ``name`` and
    ``generateName`` as strings, else one of just those two."""
    props = schema.get("properties")
    meta = props.get("metadata") if isinstance(props, Mapping) else None
    declared = meta.get("properties") if isinstance(meta, Mapping) else None
    if isinstance(declared, Mapping) and all(
            isinstance(declared.get(n), Mapping) and declared[n].get("type") == "string" for n in ("name", "generateName")):
        return meta  # type: ignore[return-value]
    return _META


def field_type(owner: CelType, name: str) -> CelType | None:
    """The type of field ``name`` (CEL-escaped) of the object ``owner``, or None when the schema declares
    no such field (cel-go: ``undefined field``)."""
    schema = owner.schema or {}
    path = f"{owner.path}.{name}"
    if owner.root:
        if name in ("apiVersion", "kind"):
            return STRING
        if name == "metadata":
            return CelType("object", schema=_metadata(schema), path=path)
    props = schema.get("properties")
    if schema.get("x-kubernetes-preserve-unknown-fields") or not isinstance(props, Mapping) or not props:
        sub = props.get(unescape(name)) if isinstance(props, Mapping) else None
        return schema_type(sub, root=False, path=path) if isinstance(sub, Mapping) else DYN
    sub = props.get(unescape(name))
    return schema_type(sub, root=False, path=path) if isinstance(sub, Mapping) else None
