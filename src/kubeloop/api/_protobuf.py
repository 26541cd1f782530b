"""Decode Kubernetes protobuf request bodies into the JSON dict the client would have sent.

kubectl's typed commands (``create namespace|configmap|secret|serviceaccount|deployment|service|
role|rolebinding|...``, ``auth can-i``, ``auth whoami``) send ``application/vnd.kubernetes.protobuf``
bodies and accept JSON answers. :func:`decode_protobuf_object` turns such a body into exactly the
JSON object the same client would have sent as JSON, so the rest of the server never sees
protobuf.

Contract:

* Envelope (apimachinery ``runtime/serializer/protobuf``): the magic ``k8s\\x00`` followed by a
  ``runtime.Unknown`` (typeMeta=1 {apiVersion=1, kind=2}, raw=2, contentEncoding=3,
  contentType=4). ``apiVersion`` and ``kind`` of the result come from that TypeMeta; the object
  itself (``raw``) carries no TypeMeta.
* Fields follow Go's JSON encoding of the decoded struct: ``omitempty`` zero values are dropped,
  pointer fields are kept when sent (an explicit ``replicas: 0`` survives), value structs are
  always written (``metadata.creationTimestamp: null``, ``status: {}``, ``resources: {}``), bytes
  are base64, Quantity is its string, IntOrString an int or a string, Time RFC 3339 in UTC.
* Unknown field numbers are skipped (newer clients); repeated scalars are accepted packed or not;
  a repeated singular message is merged, as protobuf specifies.
* Errors: a body without the magic prefix or otherwise malformed raises
  :class:`~kubeloop.api.BadRequest` (upstream answers 400 for undecodable bodies); a well-formed
  envelope of a kind this table does not know, or with a content encoding, raises
  :class:`~kubeloop.api.UnsupportedMediaType` naming the kind, so the client can resend JSON.
  Nothing else escapes.

A Quantity is read as ``ParseQuantity`` reads it (:mod:`kubeloop.api._quantity`) and written in
the form ``MarshalJSON`` gives it; a bad one is upstream's decode error, ``<Kind> in version "<v>"
cannot be handled as a <Kind>: <ParseQuantity's error>`` (400).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubeloop.api._errors import BadRequest, UnsupportedMediaType
from kubeloop.api._protobuf_entry import PROTOBUF_MEDIA_TYPE
from kubeloop.api._protobuf_schema import KINDS, MESSAGES
from kubeloop.api._protobuf_wire import (
    LENGTH_DELIMITED,
    VARINT,
    iter_fields,
    to_int32,
    to_int64,
    unpack_varints,
    wire_name,
)
from kubeloop.api._quantity import QuantityError, parse_quantity

__all__ = ["PROTOBUF_MEDIA_TYPE", "decode_protobuf_object", "protobuf_kinds"]

_MAGIC = b"k8s\x00"
_MAX_DEPTH = 64
_ABSENT: Any = object()

_VARINT_BASES = frozenset({"b", "i", "l"})
_SCALAR_BASES = frozenset({"s", "y"}) | _VARINT_BASES
# Go value structs: JSON-encoded even when empty (encoding/json ignores omitempty on structs).
_VALUE_STRUCT_BASES = frozenset({"m", "t", "q", "is"})
_ZERO: dict[str, Any] = {"s": "", "y": "", "b": False, "i": 0, "l": 0}

# Unix seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the range RFC 3339 can write.
_MIN_SECONDS = -62135596800
_MAX_SECONDS = 253402300799
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Field:
    json: str
    base: str
    message: str | None
    repeated: bool
    map: bool
    presence: str  # "" omitempty value, "?" pointer, "!" always written


def _compile(kind: str, json_name: str) -> _Field:
    repeated = kind.startswith("*")
    is_map = kind.startswith("{")
    spec = kind[1:] if repeated or is_map else kind
    message: str | None = None
    presence = ""
    if ":" in spec:
        head, message = spec.split(":", 1)
        for part in (head, message):
            if part[-1] in "?!":
                presence = part[-1]
        head, message = head.rstrip("?!"), message.rstrip("?!")
        base = head
    else:
        if spec[-1] in "?!":
            presence, spec = spec[-1], spec[:-1]
        base = spec
    return _Field(json_name, base, message, repeated, is_map, presence)


_TABLES: dict[str, dict[int, _Field]] = {
    name: {number: _compile(kind, json_name) for number, (json_name, kind) in fields.items()}
    for name, fields in MESSAGES.items()
}


def protobuf_kinds() -> frozenset[tuple[str, str]]:
    """The (apiVersion, kind) pairs :func:`decode_protobuf_object` can decode."""
    return frozenset(KINDS)


def decode_protobuf_object(body: bytes) -> dict[str, Any]:
    """The JSON object encoded in a ``application/vnd.kubernetes.protobuf`` request ``body``."""
    if not body.startswith(_MAGIC):
        raise BadRequest(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    type_meta = b""
    raw = b""
    content_encoding = ""
    content_type = ""
    for number, wire, value in iter_fields(body[len(_MAGIC) :]):
        if number == 1:
            type_meta += _bytes_of(value, wire, "Unknown.typeMeta")
        elif number == 2:
            raw = _bytes_of(value, wire, "Unknown.raw")
        elif number == 3:
            content_encoding = _text(_bytes_of(value, wire, "Unknown.contentEncoding"))
        elif number == 4:
            content_type = _text(_bytes_of(value, wire, "Unknown.contentType"))
    api_version = ""
    kind = ""
    for number, wire, value in iter_fields(type_meta):
        if number == 1:
            api_version = _text(_bytes_of(value, wire, "TypeMeta.apiVersion"))
        elif number == 2:
            kind = _text(_bytes_of(value, wire, "TypeMeta.kind"))
    if not kind:
        raise BadRequest("Object 'Kind' is missing in the protobuf envelope")
    if not api_version:
        raise BadRequest(f"Object 'apiVersion' is missing in the protobuf envelope of kind {kind}")
    if content_encoding:
        raise UnsupportedMediaType(
            f"protobuf content encoding {content_encoding!r} of kind {kind} is not supported; send the object as JSON"
        )
    if content_type not in ("", PROTOBUF_MEDIA_TYPE):
        raise UnsupportedMediaType(
            f"embedded content type {content_type!r} of kind {kind} is not supported; send the object as JSON"
        )
    root = KINDS.get((api_version, kind))
    if root is None:
        raise UnsupportedMediaType(
            f"the server cannot decode kind {kind} ({api_version}) from {PROTOBUF_MEDIA_TYPE}; "
            "send the object as application/json"
        )
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        obj.update(_decode_message(root, raw, 0))
    except QuantityError as err:  # handlers/rest.go transformDecodeError
        version = api_version.rpartition("/")[2]
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {err}') from None
    return obj


def _decode_message(name: str, buf: bytes, depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise BadRequest(f"protobuf: messages nested deeper than {_MAX_DEPTH} levels")
    table = _TABLES[name]
    collected: dict[int, Any] = {}
    for number, wire, value in iter_fields(buf):
        field = table.get(number)
        if field is None:
            continue  # unknown field: a newer client, skipped as protobuf specifies
        where = f"{name}.{field.json or field.message}"
        if field.repeated or field.map:
            items = collected.setdefault(number, [])
            if field.repeated and field.base in _VARINT_BASES and wire == LENGTH_DELIMITED:
                items.extend(unpack_varints(_bytes_of(value, wire, where)))
            elif field.repeated and field.base in _VARINT_BASES:
                items.append(_varint_of(value, wire, where))
            else:
                items.append(_bytes_of(value, wire, where))
        elif field.base in _VARINT_BASES:
            collected[number] = _varint_of(value, wire, where)
        elif field.base in ("s", "y"):
            collected[number] = _bytes_of(value, wire, where)
        else:
            # Embedded messages (and the message-typed Time, Quantity, ...) sent more than once
            # are merged; concatenating their encodings is exactly protobuf's merge.
            collected[number] = collected.get(number, b"") + _bytes_of(value, wire, where)
    out: dict[str, Any] = {}
    for number, field in table.items():
        _emit(out, field, collected.get(number, _ABSENT), depth)
    return out


def _emit(out: dict[str, Any], field: _Field, raw: Any, depth: int) -> None:
    if field.base == "inline":
        assert field.message is not None
        out.update(_decode_message(field.message, b"" if raw is _ABSENT else raw, depth + 1))
        return
    if field.repeated:
        if raw is _ABSENT:
            if field.presence == "!":
                out[field.json] = None  # a nil slice without omitempty encodes as null
            return
        out[field.json] = [_convert(field, item, depth) for item in raw]
        return
    if field.map:
        if raw is not _ABSENT:
            out[field.json] = dict(_map_entry(field, entry, depth) for entry in raw)
        return
    if raw is _ABSENT:
        if field.presence == "?":
            return
        if field.base in _VALUE_STRUCT_BASES:
            out[field.json] = _convert(field, b"", depth)
        elif field.presence == "!":
            out[field.json] = _ZERO.get(field.base)
        return
    value = _convert(field, raw, depth)
    if field.presence == "" and field.base in _SCALAR_BASES and value == _ZERO[field.base]:
        return
    out[field.json] = value


def _map_entry(field: _Field, entry: bytes, depth: int) -> tuple[str, Any]:
    key = ""
    value: Any = b"" if field.base not in _VARINT_BASES else 0
    where = f"map entry of {field.json}"
    for number, wire, item in iter_fields(entry):
        if number == 1:
            key = _text(_bytes_of(item, wire, where))
        elif number == 2:
            if field.base in _VARINT_BASES:
                value = _varint_of(item, wire, where)
            else:
                value = (
                    _bytes_of(item, wire, where)
                    if field.base in ("s", "y")
                    else value + _bytes_of(item, wire, where)
                )
    return key, _convert(field, value, depth)


def _convert(field: _Field, raw: Any, depth: int) -> Any:
    base = field.base
    if base == "s":
        return _text(raw)
    if base == "y":
        return base64.b64encode(raw).decode("ascii")
    if base == "b":
        return raw != 0
    if base == "i":
        return to_int32(raw)
    if base == "l":
        return to_int64(raw)
    if base == "m":
        assert field.message is not None
        return _decode_message(field.message, raw, depth + 1)
    if base == "t":
        return _time(raw)
    if base == "q":
        return _quantity(raw)
    if base == "is":
        return _int_or_string(raw)
    if base == "f":
        return _fields_v1(raw)
    if base == "xv":
        return [_text(_bytes_of(v, w, "ExtraValue.items")) for n, w, v in iter_fields(raw) if n == 1]
    raise AssertionError(f"unknown field kind {base!r}")


def _time(raw: bytes) -> str | None:
    """``metav1.Time``: empty bytes are the zero time (``null``); the nanoseconds are dropped."""
    if not raw:
        return None
    seconds = 0
    for number, wire, value in iter_fields(raw):
        if number == 1:
            seconds = to_int64(_varint_of(value, wire, "Timestamp.seconds"))
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
        raise BadRequest(f"protobuf: timestamp {seconds} is outside the years 0001-9999")
    return (_EPOCH + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _quantity(raw: bytes) -> str:
    text: str | None = None
    for number, wire, value in iter_fields(raw):
        if number == 1:
            text = _text(_bytes_of(value, wire, "Quantity.string"))
    if text is None:
        return "0"  # the zero Quantity
    return parse_quantity(text).text


def _int_or_string(raw: bytes) -> int | str:
    kind = 0
    int_value = 0
    str_value = ""
    for number, wire, value in iter_fields(raw):
        if number == 1:
            kind = to_int64(_varint_of(value, wire, "IntOrString.type"))
        elif number == 2:
            int_value = to_int32(_varint_of(value, wire, "IntOrString.intVal"))
        elif number == 3:
            str_value = _text(_bytes_of(value, wire, "IntOrString.strVal"))
    if kind == 0:
        return int_value
    if kind == 1:
        return str_value
    raise BadRequest(f"protobuf: impossible IntOrString.Type {kind}")


def _fields_v1(raw: bytes) -> Any:
    data = b""
    for number, wire, value in iter_fields(raw):
        if number == 1:
            data = _bytes_of(value, wire, "FieldsV1.Raw")
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"protobuf: managedFields fieldsV1 is not JSON: {exc}") from None


def _text(raw: bytes) -> str:
    # Go strings may hold any bytes; encoding/json writes invalid UTF-8 as U+FFFD.
    return raw.decode("utf-8", "replace")


def _bytes_of(value: int | bytes, wire: int, where: str) -> bytes:
    if isinstance(value, bytes):
        return value
    raise BadRequest(f"protobuf: {where} has wire type {wire_name(wire)}, expected bytes")


def _varint_of(value: int | bytes, wire: int, where: str) -> int:
    if wire == VARINT:
        assert isinstance(value, int)
        return value
    raise BadRequest(f"protobuf: {where} has wire type {wire_name(wire)}, expected varint")
