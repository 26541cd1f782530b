"""``/openapi/v2``: the swagger 2.0 document kubectl validates a ``kind: List`` against, as JSON and protobuf.

Upstream: kube-openapi ``pkg/handler/handler.go`` (content negotiation over JSON and both gnostic protobuf
media types, the protobuf answer labelled ``...spec.v2.v1.0+protobuf``, ETag = quoted upper-case hex
SHA-512 of the JSON, ``Vary: Accept``, 406 when nothing fits); gnostic-models ``openapiv2/OpenAPIv2.proto``
(field numbers); apiextensions-apiserver ``pkg/controller/openapi/v2/conversion.go``
(``ToStructuralOpenAPIV2``: what a CRD schema loses in v2). The protobuf is read back here with a
wire-format reader of the test's own, not with the server's code.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import struct
from typing import Any

import httpx
import yaml

from kubeloop.server import App

from .test_field_validation import establish

PB_LEGACY = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what client-go sends
PB = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gizmos", "kind": "Gizmo", "listKind": "GizmoList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "description": "A gizmo.",
                 "properties": {"spec": {
                     "type": "object", "required": ["size", "color"],
                     "properties": {
                         "size": {"type": "integer", "nullable": True, "minimum": 1},
                         "color": {"type": "string", "enum": ["red", "blue"]},
                         "port": {"x-kubernetes-int-or-string": True,
                                  "anyOf": [{"type": "integer"}, {"type": "string"}]},
                         "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                   "properties": {"a": {"type": "string"}}},
                         "tags": {"type": "array", "x-kubernetes-list-type": "set",
                                  "items": {"type": "string"}},
                     }}}}}}]},
}  # fmt: skip


# -- an independent protobuf reader: (field number -> list of raw values) per message -------------------
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value = struct.unpack("<d", buf[pos : pos + 8])[0]
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value = buf[pos : pos + length]
            pos += length
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def named(buf: bytes, number: int = 1) -> dict[str, bytes]:
    """A gnostic map (repeated Named* {name=1, value=2}) held in field ``number`` of ``buf``."""
    result: dict[str, bytes] = {}
    for entry in fields(buf).get(number, []):
        f = fields(entry)
        result[f[1][0].decode()] = f.get(2, [b""])[0]
    return result


def extensions(schema: dict[int, list[Any]], number: int = 31) -> dict[str, Any]:
    """Vendor extensions (NamedAny, Any.yaml=2) decoded from their YAML."""
    return {
        f[1][0].decode(): yaml.safe_load(fields(f[2][0])[2][0].decode())
        for f in (fields(entry) for entry in schema.get(number, []))
    }


def pb_schema(raw: bytes) -> dict[str, Any]:
    """The parts of a gnostic Schema the tests compare with the JSON form."""
    f = fields(raw)
    out: dict[str, Any] = {}
    if 1 in f:
        out["$ref"] = f[1][0].decode()
    if 4 in f:
        out["description"] = f[4][0].decode()
    if 9 in f:
        out["minimum"] = f[9][0]
    if 19 in f:
        out["required"] = [v.decode() for v in f[19]]
    if 20 in f:
        out["enum"] = [yaml.safe_load(fields(v)[2][0].decode()) for v in f[20]]
    if 21 in f:
        item = fields(f[21][0])
        out["additionalProperties"] = pb_schema(item[1][0]) if 1 in item else bool(item[2][0])
    if 22 in f:
        values = [v.decode() for v in fields(f[22][0]).get(1, [])]
        out["type"] = values[0] if len(values) == 1 else values
    if 23 in f:
        out["items"] = pb_schema(fields(f[23][0])[1][0])
    if 25 in f:
        out["properties"] = {name: pb_schema(value) for name, value in named(f[25][0]).items()}
    out.update(extensions(f))
    return out


def comparable(schema: Any) -> Any:
    """The JSON schema restricted to what :func:`pb_schema` reads."""
    if not isinstance(schema, dict):
        return schema
    keep = ("$ref", "description", "minimum", "required", "enum", "additionalProperties", "type", "items",
            "properties")
    out = {k: v for k, v in schema.items() if k in keep or k.startswith("x-")}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = comparable(out["additionalProperties"])
    if "items" in out:
        out["items"] = comparable(out["items"])
    if "properties" in out:
        out["properties"] = {k: comparable(v) for k, v in out["properties"].items()}
    return out


async def get(client: httpx.AsyncClient, accept: str | None = None, **headers: str) -> httpx.Response:
    if accept is not None:
        headers["accept"] = accept
    return await client.get("/openapi/v2", headers=headers)


def all_refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= all_refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(all_refs(v) for v in node)) if node else set()
    return set()


# -- JSON ---------------------------------------------------------------------------------------------
async def test_json_is_the_default_and_holds_every_served_kind(app: App, client: httpx.AsyncClient) -> None:
    for accept in (None, "*/*", "application/json", "application/*"):
        r = await get(client, accept)
        assert r.status_code == 200, accept
        assert r.headers["content-type"] == "application/json"
        assert r.headers["vary"] == "Accept"
    doc = r.json()
    assert doc["swagger"] == "2.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "v1.32.0"}
    definitions = doc["definitions"]
    gvks = [d.get("x-kubernetes-group-version-kind") for d in definitions.values()]
    for group, version in app.kinds.group_versions():
        for info in app.kinds.in_group_version(group, version):
            if "/" not in info.plural:
                assert [{"group": group, "kind": info.kind, "version": version}] in gvks, info.kind
    config_map = definitions["io.k8s.api.core.v1.ConfigMap"]
    assert config_map["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    # swagger 2.0 keeps a reference's description beside it (no allOf wrapping as in v3).
    assert config_map["properties"]["metadata"]["$ref"] == f"#/definitions/{META}.ObjectMeta"
    assert "allOf" not in config_map["properties"]["metadata"]
    assert config_map["properties"]["data"]["additionalProperties"] == {"type": "string"}
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    # Every reference resolves inside the document.
    refs = all_refs(doc)
    assert refs and all(ref.startswith("#/definitions/") for ref in refs)
    assert {ref.removeprefix("#/definitions/") for ref in refs} <= definitions.keys()


async def test_json_paths_carry_the_field_validation_parameter(client: httpx.AsyncClient) -> None:
    doc = (await get(client)).json()
    item = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    patch = item["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedConfigMap"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap", "version": "v1"}
    params = {p["name"]: p for p in patch["parameters"]}
    assert params["fieldValidation"] == {**params["fieldValidation"], "in": "query", "type": "string"}
    assert params["body"]["in"] == "body" and params["body"]["schema"] == {"$ref": f"#/definitions/{META}.Patch"}
    assert "application/apply-patch+yaml" in patch["consumes"]
    assert patch["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}
    assert {p["name"]: p["in"] for p in item["parameters"]} == {"name": "path", "namespace": "path", "pretty": "query"}
    assert doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"]["consumes"] == ["*/*"]


# -- protobuf -----------------------------------------------------------------------------------------
async def test_protobuf_under_both_media_types_decodes_to_the_json_document(client: httpx.AsyncClient) -> None:
    doc = (await get(client)).json()
    bodies = []
    for accept in (PB_LEGACY, PB):
        r = await get(client, accept)
        assert r.status_code == 200
        assert r.headers["content-type"] == PB  # upstream labels both with the non-deprecated type
        bodies.append(r.content)
    assert bodies[0] == bodies[1]
    top = fields(bodies[0])
    assert top[1] == [b"2.0"]
    info = fields(top[2][0])
    assert (info[1], info[2]) == ([b"Kubernetes"], [b"v1.32.0"])
    definitions = named(top[9][0])
    assert definitions.keys() == doc["definitions"].keys()
    for name in ("io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.PodSpec", f"{META}.ObjectMeta",
                 "io.k8s.api.apps.v1.Deployment"):
        assert pb_schema(definitions[name]) == comparable(doc["definitions"][name]), name
    # BearerToken, as kube-apiserver publishes it.
    security = named(top[13][0])
    api_key = fields(fields(security["BearerToken"])[2][0])
    assert (api_key[1], api_key[2], api_key[3]) == ([b"apiKey"], [b"authorization"], [b"header"])


async def test_protobuf_paths_keep_the_patch_operation_and_its_parameters(client: httpx.AsyncClient) -> None:
    body = (await get(client, PB_LEGACY)).content
    paths = named(fields(body)[8][0], number=2)
    item = fields(paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"])
    patch = fields(item[8][0])  # PathItem.patch = 8
    assert patch[5] == [b"patchAppsV1NamespacedDeployment"]
    assert extensions(patch, 13)["x-kubernetes-group-version-kind"] == {
        "group": "apps", "kind": "Deployment", "version": "v1"}
    names = []
    for raw in patch[8]:  # ParametersItem.parameter (1) -> Parameter
        parameter = fields(fields(raw)[1][0])
        if 1 in parameter:  # body_parameter: name = 2
            names.append(fields(parameter[1][0])[2][0].decode())
        else:  # non_body_parameter -> query_parameter_sub_schema (3): name = 4, type = 6
            query = fields(fields(parameter[2][0])[3][0])
            names.append(query[4][0].decode())
            assert query[2] == [b"query"]
    assert names[0] == "body" and "fieldValidation" in names
    responses = named(patch[9][0])  # Responses.response_code = 1 (NamedResponseValue)
    ok = fields(fields(responses["200"])[1][0])  # ResponseValue.response -> Response
    assert ok[1] == [b"OK"]
    assert pb_schema(fields(ok[2][0])[1][0]) == {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}


# -- negotiation and caching --------------------------------------------------------------------------
async def test_negotiation_follows_quality_and_refuses_what_it_cannot_serve(client: httpx.AsyncClient) -> None:
    r = await get(client, f"application/json;q=0.5, {PB_LEGACY}")
    assert r.headers["content-type"] == PB
    r = await get(client, f"{PB};q=0.1, application/json")
    assert r.headers["content-type"] == "application/json"
    r = await get(client, "text/html")
    assert r.status_code == 406 and r.content == b""
    assert r.headers["vary"] == "Accept"


async def test_etag_is_the_sha512_of_the_json_for_both_forms(client: httpx.AsyncClient) -> None:
    json_answer = await get(client)
    expected = '"' + hashlib.sha512(json_answer.content).hexdigest().upper() + '"'
    assert json_answer.headers["etag"] == expected
    assert (await get(client, PB_LEGACY)).headers["etag"] == expected
    for accept in (None, PB_LEGACY):
        cached = await get(client, accept, **{"if-none-match": expected})
        assert cached.status_code == 304 and cached.content == b""
    assert (await get(client, None, **{"if-none-match": '"stale"'})).status_code == 200


async def test_only_get_and_head_are_served(client: httpx.AsyncClient) -> None:
    r = await client.post("/openapi/v2", content=b"{}")
    assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed"
    head = await client.head("/openapi/v2")
    assert head.status_code == 200 and head.content == b""
    assert (await client.get("/openapi/v2/extra")).status_code == 404


# -- custom resources ---------------------------------------------------------------------------------
async def test_a_crd_schema_appears_in_v2_form_and_goes_with_the_crd(app: App, client: httpx.AsyncClient) -> None:
    before = await get(client)
    assert "com.example.v1.Gizmo" not in before.json()["definitions"]
    await establish(app, client, copy.deepcopy(CRD))
    after = await get(client)
    assert after.headers["etag"] != before.headers["etag"]
    definitions = after.json()["definitions"]
    gizmo = definitions["com.example.v1.Gizmo"]
    assert gizmo["x-kubernetes-group-version-kind"] == [{"group": "example.com", "kind": "Gizmo", "version": "v1"}]
    assert gizmo["properties"]["metadata"]["$ref"] == f"#/definitions/{META}.ObjectMeta"
    spec = gizmo["properties"]["spec"]
    # ToStructuralOpenAPIV2: a nullable property is untyped and no longer required; junctors are dropped;
    # a preserve-unknown-fields object loses its type and properties; markers stay.
    assert spec["required"] == ["color"]
    assert spec["properties"]["size"] == {"minimum": 1}
    assert spec["properties"]["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert spec["properties"]["port"] == {"x-kubernetes-int-or-string": True}
    assert spec["properties"]["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert spec["properties"]["tags"] == {"type": "array", "x-kubernetes-list-type": "set",
                                          "items": {"type": "string"}}
    gizmo_list = definitions["com.example.v1.GizmoList"]
    assert gizmo_list["properties"]["items"]["items"] == {"$ref": "#/definitions/com.example.v1.Gizmo"}
    assert "/apis/example.com/v1/namespaces/{namespace}/gizmos/{name}" in after.json()["paths"]
    # The protobuf follows the same document.
    pb = named(fields((await get(client, PB_LEGACY)).content)[9][0])
    assert pb_schema(pb["com.example.v1.Gizmo"]) == comparable(gizmo)

    r = await client.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com")
    assert r.status_code == 200
    for _ in range(200):
        if "com.example.v1.Gizmo" not in (await get(client)).json()["definitions"]:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the CRD's schema stayed in /openapi/v2 after the CRD was deleted")
    assert (await get(client)).headers["etag"] == before.headers["etag"]

