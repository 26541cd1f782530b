"""The protobuf wire format, read-only: fields of one message as (number, wire type, value).

Contract: :func:`iter_fields` walks one serialised message and yields every field in order, with
the raw value for its wire type: an ``int`` for varint (0), fixed64 (1) and fixed32 (5), and
``bytes`` (a zero-copy-free slice) for length-delimited (2). It never reads past the buffer and
never raises anything but :class:`~kubeloop.api.BadRequest`: truncated varints, varints longer
than ten bytes, lengths past the end, field number 0 and the deprecated group wire types (3, 4,
which go-to-protobuf never emits) are all malformed input. Interpreting a value (signedness,
packing, UTF-8, nested messages) is the schema-driven decoder's job, with the helpers here.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubeloop.api._errors import BadRequest

__all__ = [
    "FIXED32",
    "FIXED64",
    "LENGTH_DELIMITED",
    "VARINT",
    "iter_fields",
    "read_varint",
    "to_int32",
    "to_int64",
    "unpack_varints",
    "wire_name",
]

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5

_MAX_VARINT_BYTES = 10
_WIRE_NAMES = {VARINT: "varint", FIXED64: "fixed64", LENGTH_DELIMITED: "bytes", FIXED32: "fixed32"}


def wire_name(wire_type: int) -> str:
    return _WIRE_NAMES.get(wire_type, f"wire type {wire_type}")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode the base-128 varint at ``pos``; return (value as unsigned 64-bit, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= end:
            raise BadRequest("protobuf: unexpected end of data inside a varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            # Go's generated decoders keep the low 64 bits of a 10-byte varint; so do we.
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise BadRequest("protobuf: varint longer than 10 bytes")


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, raw value) for each field of the message in ``buf``."""
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number = key >> 3
        wire_type = key & 0x7
        if number == 0 or number > 0x1FFFFFFF:
            raise BadRequest(f"protobuf: illegal field number {number}")
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
            yield number, wire_type, value
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(buf, pos)
            if length > end - pos:
                raise BadRequest(f"protobuf: field {number} length {length} runs past the end of data")
            yield number, wire_type, buf[pos : pos + length]
            pos += length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if size > end - pos:
                raise BadRequest(f"protobuf: unexpected end of data inside field {number}")
            yield number, wire_type, int.from_bytes(buf[pos : pos + size], "little")
            pos += size
        else:
            raise BadRequest(f"protobuf: unsupported wire type {wire_type} for field {number}")


def unpack_varints(buf: bytes) -> list[int]:
    """The values of a packed repeated varint field."""
    values: list[int] = []
    pos = 0
    while pos < len(buf):
        value, pos = read_varint(buf, pos)
        values.append(value)
    return values


def to_int64(value: int) -> int:
    """Reinterpret an unsigned 64-bit varint as the two's-complement ``int64`` Go decodes."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def to_int32(value: int) -> int:
    """Go's ``int32`` decoding: the low 32 bits of the varint, two's complement."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
