"""A swagger 2.0 document (JSON form) as gnostic's ``openapi.v2.Document`` protobuf.

Upstream serves the protobuf form of ``/openapi/v2`` by parsing its JSON document with gnostic
(``openapi_v2.ParseDocument``) and marshalling the result (kube-openapi ``pkg/handler/handler.go``
``ToProtoBinary``); client-go's ``discovery.OpenAPISchema`` decodes it into the same message and
kubectl validates against it. Field numbers are those of gnostic-models ``openapiv2/OpenAPIv2.proto``.

Contract: :func:`encode_document` writes exactly the parts of the message a document here holds:
``Document`` (swagger, info, paths, definitions, security, securityDefinitions), ``Info``, ``Paths``
with ``PathItem``/``Operation``, parameters (``BodyParameter`` and the query/path sub-schemas),
``Responses``, ``Schema`` with every scalar and nested field, ``ItemsItem``, ``Properties``,
``AdditionalPropertiesItem`` and vendor extensions (``x-...`` keys) as ``NamedAny`` whose ``Any.yaml`` is
the value as YAML, as gnostic stores it. Proto3 rules: a scalar equal to its zero value is not written
(a ``oneof`` member always is); repeated strings are not packed; doubles are fixed64 little-endian;
negative int64s are ten-byte varints. Keys swagger 2.0 does not define (``nullable``, ``oneOf``...) are
left out, as gnostic refuses them. The input is never modified.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import yaml

__all__ = ["encode_document"]

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Dumper = yaml.SafeDumper


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Message:
    """One message being written: fields appended in the order of their numbers by the callers."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def bytes_field(self, number: int, data: bytes) -> None:
        self.parts.extend((_varint(number << 3 | 2), _varint(len(data)), data))

    def string(self, number: int, value: Any) -> None:
        if isinstance(value, str) and value:
            self.bytes_field(number, value.encode())

    def strings(self, number: int, values: Any) -> None:
        if isinstance(values, list):
            for value in values:
                if isinstance(value, str):
                    self.bytes_field(number, value.encode())

    def boolean(self, number: int, value: Any, *, always: bool = False) -> None:
        if isinstance(value, bool) and (value or always):
            self.parts.append(_varint(number << 3) + (b"\x01" if value else b"\x00"))

    def int64(self, number: int, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self.parts.append(_varint(number << 3) + _varint(value))

    def double(self, number: int, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            self.parts.append(_varint(number << 3 | 1) + struct.pack("<d", float(value)))

    def message(self, number: int, sub: _Message) -> None:
        self.bytes_field(number, sub.encode())

    def encode(self) -> bytes:
        return b"".join(self.parts)


def _any(value: Any) -> _Message:
    """gnostic ``Any``: the value kept as YAML text (field 2)."""
    text = yaml.dump(value, Dumper=_Dumper, default_flow_style=False, allow_unicode=True)
    # PyYAML ends a lone scalar with an explicit document end; Go's yaml.Marshal does not.
    text = text.removesuffix("...\n")
    out = _Message()
    out.string(2, text)
    return out


def _vendor_extensions(out: _Message, number: int, node: Mapping[str, Any]) -> None:
    for key, value in node.items():
        if key.startswith("x-"):
            named = _Message()
            named.string(1, key)
            named.message(2, _any(value))
            out.message(number, named)


def _schema(node: Mapping[str, Any]) -> _Message:
    out = _Message()
    out.string(1, node.get("$ref"))
    out.string(2, node.get("format"))
    out.string(3, node.get("title"))
    out.string(4, node.get("description"))
    if "default" in node:
        out.message(5, _any(node["default"]))
    out.double(6, node.get("multipleOf"))
    out.double(7, node.get("maximum"))
    out.boolean(8, node.get("exclusiveMaximum"))
    out.double(9, node.get("minimum"))
    out.boolean(10, node.get("exclusiveMinimum"))
    out.int64(11, node.get("maxLength"))
    out.int64(12, node.get("minLength"))
    out.string(13, node.get("pattern"))
    out.int64(14, node.get("maxItems"))
    out.int64(15, node.get("minItems"))
    out.boolean(16, node.get("uniqueItems"))
    out.int64(17, node.get("maxProperties"))
    out.int64(18, node.get("minProperties"))
    out.strings(19, node.get("required"))
    for value in node.get("enum") or ():
        out.message(20, _any(value))
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        item = _Message()
        item.message(1, _schema(additional))
        out.message(21, item)
    elif isinstance(additional, bool):
        item = _Message()
        item.boolean(2, additional, always=True)  # a oneof member is written even when false
        out.message(21, item)
    kind = node.get("type")
    if kind:
        type_item = _Message()
        type_item.strings(1, kind if isinstance(kind, list) else [kind])
        out.message(22, type_item)
    items = node.get("items")
    if isinstance(items, Mapping | list):
        items_item = _Message()
        for sub in items if isinstance(items, list) else [items]:
            items_item.message(1, _schema(sub))
        out.message(23, items_item)
    for sub in node.get("allOf") or ():
        out.message(24, _schema(sub))
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        props = _Message()
        for name, sub in properties.items():
            props.message(1, _named(name, _schema(sub)))
        out.message(25, props)
    out.string(26, node.get("discriminator"))
    out.boolean(27, node.get("readOnly"))
    if "example" in node:
        out.message(30, _any(node["example"]))
    _vendor_extensions(out, 31, node)
    return out


def _named(name: str, value: _Message) -> _Message:
    out = _Message()
    out.string(1, name)
    out.message(2, value)
    return out


def _parameter(param: Mapping[str, Any]) -> _Message:
    """``ParametersItem`` holding a ``Parameter``: a body parameter, or a query/path sub-schema."""
    parameter = _Message()
    if param.get("in") == "body":
        body = _Message()
        body.string(1, param.get("description"))
        body.string(2, param.get("name"))
        body.string(3, param.get("in"))
        body.boolean(4, param.get("required"))
        if isinstance(param.get("schema"), Mapping):
            body.message(5, _schema(param["schema"]))
        _vendor_extensions(body, 6, param)
        parameter.message(1, body)
    else:
        sub = _Message()
        sub.boolean(1, param.get("required"))
        sub.string(2, param.get("in"))
        sub.string(3, param.get("description"))
        sub.string(4, param.get("name"))
        if param.get("in") == "query":
            # QueryParameterSubSchema: allow_empty_value=5 shifts type, format... by one.
            sub.string(6, param.get("type"))
            sub.string(7, param.get("format"))
            sub.boolean(20, param.get("uniqueItems"))
            _vendor_extensions(sub, 23, param)
            which = 3
        else:
            sub.string(5, param.get("type"))
            sub.string(6, param.get("format"))
            sub.boolean(19, param.get("uniqueItems"))
            _vendor_extensions(sub, 22, param)
            which = 4
        non_body = _Message()
        non_body.message(which, sub)
        parameter.message(2, non_body)
    item = _Message()
    item.message(1, parameter)
    return item


def _operation(op: Mapping[str, Any]) -> _Message:
    out = _Message()
    out.strings(1, op.get("tags"))
    out.string(2, op.get("summary"))
    out.string(3, op.get("description"))
    out.string(5, op.get("operationId"))
    out.strings(6, op.get("produces"))
    out.strings(7, op.get("consumes"))
    for param in op.get("parameters") or ():
        out.message(8, _parameter(param))
    responses = _Message()
    for code, response in (op.get("responses") or {}).items():
        body = _Message()
        body.string(1, response.get("description"))
        if isinstance(response.get("schema"), Mapping):
            schema_item = _Message()
            schema_item.message(1, _schema(response["schema"]))
            body.message(2, schema_item)
        value = _Message()
        value.message(1, body)
        responses.message(1, _named(code, value))
    out.message(9, responses)
    out.strings(10, op.get("schemes"))
    _vendor_extensions(out, 13, op)
    return out


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: Mapping[str, Any]) -> _Message:
    out = _Message()
    for method, number in _METHODS.items():
        if isinstance(item.get(method), Mapping):
            out.message(number, _operation(item[method]))
    for param in item.get("parameters") or ():
        out.message(9, _parameter(param))
    _vendor_extensions(out, 10, item)
    return out


def _security_definitions(defs: Mapping[str, Any]) -> _Message:
    out = _Message()
    for name, scheme in defs.items():
        api_key = _Message()  # the only scheme kube-apiserver publishes (BearerToken)
        api_key.string(1, scheme.get("type"))
        api_key.string(2, scheme.get("name"))
        api_key.string(3, scheme.get("in"))
        api_key.string(4, scheme.get("description"))
        item = _Message()
        item.message(2, api_key)
        out.message(1, _named(name, item))
    return out


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """The gnostic ``openapi.v2.Document`` bytes of the swagger 2.0 document ``doc``."""
    out = _Message()
    out.string(1, doc.get("swagger"))
    info = doc.get("info") or {}
    info_message = _Message()
    info_message.string(1, info.get("title"))
    info_message.string(2, info.get("version"))
    info_message.string(3, info.get("description"))
    out.message(2, info_message)
    paths = _Message()
    for name, item in (doc.get("paths") or {}).items():
        paths.message(2, _named(name, _path_item(item)))
    out.message(8, paths)
    definitions = _Message()
    for name, schema in (doc.get("definitions") or {}).items():
        definitions.message(1, _named(name, _schema(schema)))
    out.message(9, definitions)
    for requirement in doc.get("security") or ():
        req = _Message()
        for name, scopes in requirement.items():
            array = _Message()
            array.strings(1, scopes)
            req.message(1, _named(name, array))
        out.message(12, req)
    if doc.get("securityDefinitions"):
        out.message(13, _security_definitions(doc["securityDefinitions"]))
    return out.encode()
