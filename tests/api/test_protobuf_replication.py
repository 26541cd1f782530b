"""Protobuf bodies of core/v1 ReplicationControllers and PodTemplates (client-go's typed clients send them).

Field numbers: k8s.io/api ``core/v1/generated.proto`` (``ReplicationController``, ``ReplicationControllerSpec``,
``ReplicationControllerStatus``, ``ReplicationControllerCondition``, ``PodTemplate``); presence from the Go
types' JSON tags (``core/v1/types.go``: ``Spec.Replicas *int32``, ``Spec.Template *PodTemplateSpec``,
``Status.Replicas int32 `json:"replicas"``` without omitempty, ``PodTemplate.Template`` a value struct).

The round trips encode a JSON object with a small encoder driven by the decoder's own message tables (every
field, map entry and repeated item as protobuf writes it), decode it, and compare with the JSON Go's
encoding of the decoded struct gives: the object itself plus the fields Go always writes.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from kubeloop.api import decode_protobuf_object
from kubeloop.api._protobuf import _TABLES, _Field, protobuf_kinds


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def tagged(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def encode_value(field: _Field, value: Any) -> bytes | int:
    base = field.base
    if base == "s":
        return str(value).encode()
    if base == "y":
        return base64.b64decode(value)
    if base in ("b", "i", "l"):
        return int(value)
    if base == "m":
        assert field.message is not None
        return encode_message(field.message, value)
    if base == "q":
        return tagged(1, str(value).encode())
    if base == "is":
        return tagged(1, 0) + tagged(2, value) if isinstance(value, int) else tagged(1, 1) + tagged(3, value.encode())
    if base == "t":
        seconds = int(datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).timestamp())
        return tagged(1, seconds)
    raise AssertionError(f"no encoder for {base!r}")


def encode_message(name: str, obj: dict[str, Any]) -> bytes:
    """``obj`` as the message ``name``: every field it holds, in field-number order."""
    out = b""
    for number, field in sorted(_TABLES[name].items()):
        if field.base == "inline":
            assert field.message is not None
            out += tagged(number, encode_message(field.message, obj))
            continue
        value = obj.get(field.json)
        if value is None:
            continue
        if field.map:
            for key, item in value.items():
                out += tagged(number, tagged(1, key.encode()) + tagged(2, encode_value(field, item)))
        elif field.repeated:
            for item in value:
                out += tagged(number, encode_value(field, item))
        else:
            out += tagged(number, encode_value(field, value))
    return out


def envelope(api_version: str, kind: str, obj: dict[str, Any]) -> bytes:
    raw = encode_message(kind, {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")})
    return b"k8s\x00" + tagged(1, tagged(1, api_version.encode()) + tagged(2, kind.encode())) + tagged(2, raw)


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "resources": {"limits": {"cpu": "500m"}},
                             "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
             "restartPolicy": "Always", "terminationGracePeriodSeconds": 30},
}


def test_both_kinds_are_decodable() -> None:
    assert {("v1", "ReplicationController"), ("v1", "PodTemplate")} <= protobuf_kinds()


def test_replication_controller_round_trips_spec_status_and_conditions() -> None:
    rc = {
        "kind": "ReplicationController", "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}, "generation": 3,
                     "creationTimestamp": "2026-01-02T03:04:05Z"},
        "spec": {"replicas": 3, "minReadySeconds": 5, "selector": {"app": "web"}, "template": TEMPLATE},
        "status": {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1,
                   "observedGeneration": 3,
                   "conditions": [{"type": "ReplicaFailure", "status": "True",
                                   "lastTransitionTime": "2026-01-02T03:05:00Z", "reason": "FailedCreate",
                                   "message": "quota"}]},
    }
    assert decode_protobuf_object(envelope("v1", "ReplicationController", rc)) == rc


def test_replication_controller_presence_follows_the_go_json_tags() -> None:
    # replicas is *int32: a sent 0 stays; minReadySeconds is omitempty; the template pointer absent is left out;
    # status.replicas has no omitempty and is always written; the value structs are written empty.
    rc = {"metadata": {"name": "zero"}, "spec": {"replicas": 0, "minReadySeconds": 0}}
    decoded = decode_protobuf_object(envelope("v1", "ReplicationController", rc))
    assert decoded == {"kind": "ReplicationController", "apiVersion": "v1",
                       "metadata": {"name": "zero", "creationTimestamp": None},
                       "spec": {"replicas": 0}, "status": {"replicas": 0}}
    # A condition's lastTransitionTime is a value metav1.Time: null when unset; type and status always written.
    bare = tagged(1, tagged(1, b"r")) + tagged(3, tagged(6, b""))
    body = b"k8s\x00" + tagged(1, tagged(1, b"v1") + tagged(2, b"ReplicationController")) + tagged(2, bare)
    assert decode_protobuf_object(body)["status"] == {
        "replicas": 0, "conditions": [{"type": "", "status": "", "lastTransitionTime": None}]}


def test_pod_template_round_trips_and_its_template_is_a_value_struct() -> None:
    template = {"kind": "PodTemplate", "apiVersion": "v1",
                "metadata": {"name": "batch", "annotations": {"a": "b"}, "creationTimestamp": None},
                "template": TEMPLATE}
    assert decode_protobuf_object(envelope("v1", "PodTemplate", template)) == template
    empty = decode_protobuf_object(envelope("v1", "PodTemplate", {"metadata": {"name": "e"}}))
    assert empty["template"] == {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
