"""The /openapi/v3 documents kubectl reads: root, per-group/version documents, hashes and caching.

Facts: apimachinery reference section 3 (cli-runtime ``query_param_verifier_v3.go``: a PATCH op
with ``x-kubernetes-group-version-kind`` and a ``fieldValidation`` parameter; Namespace PATCH in
``api/v1`` for CRD kinds) and 8.5 (list markers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from kubeloop.api import BUILTIN_RESOURCES, REVIEW_RESOURCES, KindRegistry, ResourceInfo, ScalePaths
from kubeloop.api._kinds import OTHER_VERSIONS
from kubeloop.server._openapi import OpenAPIDocuments

WIDGET = ResourceInfo(
    "example.com",
    "v1",
    "Widget",
    "widgets",
    "widget",
    True,
    custom=True,
    tracks_generation=True,
    allow_unconditional_update=False,
    status_subresource=True,
    scale=ScalePaths(".spec.replicas", ".status.replicas"),
)
WIDGET_SCHEMA = {
    "type": "object",
    "description": "A widget.",
    "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "description": "How big."}}}
    },
}


class Schemas:
    def __init__(self) -> None:
        self.revision = 1
        self.schemas: dict[tuple[str, str, str], Mapping[str, Any]] = {
            ("example.com", "v1", "Widget"): WIDGET_SCHEMA
        }

    def schema(self, group: str, version: str, kind: str) -> Mapping[str, Any] | None:
        return self.schemas.get((group, version, kind))


def document(docs: OpenAPIDocuments, gv: str) -> dict[str, Any]:
    response = docs.respond(f"/openapi/v3/{gv}", {}, {})
    assert response.status == 200
    parsed: dict[str, Any] = orjson.loads(response.body)
    return parsed


def patch_ops(doc: dict[str, Any]) -> dict[str, list[str]]:
    """kind -> names of the query parameters of its PATCH operation (main resource only)."""
    out: dict[str, list[str]] = {}
    for path, item in doc["paths"].items():
        patch = item.get("patch")
        # Not a subresource's (a proxy's PATCH is a connect operation with its parameters on the path).
        if patch and not path.endswith(("/status", "/scale", "/proxy", "/proxy/{path}")):
            out[patch["x-kubernetes-group-version-kind"]["kind"]] = [p["name"] for p in patch["parameters"]]
    return out


def all_refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.add(value)
            else:
                found |= all_refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= all_refs(item)
    return found


def test_root_lists_every_served_group_version_with_a_hashed_url() -> None:
    docs = OpenAPIDocuments(KindRegistry())
    root = orjson.loads(docs.respond("/openapi/v3", {}, {}).body)
    # The reviews' groups too (authentication.k8s.io/v1, authorization.k8s.io/v1), as upstream's root lists them,
    # and autoscaling/v1 (converted from the stored v2).
    served = (*BUILTIN_RESOURCES, *REVIEW_RESOURCES, *OTHER_VERSIONS)
    expected = {f"apis/{i.group}/{i.version}" if i.group else "api/v1" for i in served}
    assert set(root["paths"]) == expected
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=") and len(url.split("=")[1]) == 128


def test_every_builtin_kind_has_a_patch_operation_with_field_validation() -> None:
    docs = OpenAPIDocuments(KindRegistry())
    for group, version in KindRegistry().group_versions():
        gv = f"apis/{group}/{version}" if group else f"api/{version}"
        ops = patch_ops(document(docs, gv))
        for info in KindRegistry().in_group_version(group, version):
            if "patch" in info.verbs:  # not the create-only reviews
                assert "fieldValidation" in ops[info.kind], info.kind
    assert "Namespace" in patch_ops(document(docs, "api/v1"))


def test_builtin_schemas_are_real_closed_and_carry_markers() -> None:
    doc = document(OpenAPIDocuments(KindRegistry()), "apis/apps/v1")
    schemas = doc["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}]
    assert "description" in strategy
    assert schemas["io.k8s.api.apps.v1.DeploymentStrategy"]["properties"]["type"]["type"] == "string"
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    missing = {r for r in all_refs(doc) if r.removeprefix("#/components/schemas/") not in schemas}
    assert missing == set()


def test_custom_kind_document_uses_the_crd_schema_and_no_strategic_merge() -> None:
    registry = KindRegistry([*BUILTIN_RESOURCES, WIDGET])
    doc = document(OpenAPIDocuments(registry, custom_schemas=Schemas()), "apis/example.com/v1")
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["properties"]["spec"]["properties"]["size"]["description"] == "How big."
    assert widget["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "com.example.v1.WidgetList" in doc["components"]["schemas"]
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert "application/strategic-merge-patch+json" not in item["patch"]["requestBody"]["content"]
    assert "fieldValidation" in [p["name"] for p in item["patch"]["parameters"]]
    scale = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Scale"


def test_hash_changes_when_a_kind_is_added_or_its_schema_changes_and_not_otherwise() -> None:
    registry = KindRegistry([*BUILTIN_RESOURCES, WIDGET])
    schemas = Schemas()
    docs = OpenAPIDocuments(registry, custom_schemas=schemas)

    def hashes() -> dict[str, str]:
        root = orjson.loads(docs.respond("/openapi/v3", {}, {}).body)
        return {gv: entry["serverRelativeURL"].split("hash=")[1] for gv, entry in root["paths"].items()}

    first = hashes()
    assert hashes() == first
    registry.add(replace(WIDGET, version="v2"))
    schemas.schemas[("example.com", "v2", "Widget")] = WIDGET_SCHEMA
    second = hashes()
    assert "apis/example.com/v2" in second and "apis/example.com/v2" not in first
    assert second["apis/apps/v1"] == first["apis/apps/v1"]
    schemas.schemas[("example.com", "v1", "Widget")] = {"type": "object"}
    schemas.revision += 1
    third = hashes()
    assert third["apis/example.com/v1"] != second["apis/example.com/v1"]
    registry.remove("example.com", "v1", "widgets")
    assert "apis/example.com/v1" not in hashes()


def test_stale_hash_redirects_and_etag_allows_revalidation() -> None:
    docs = OpenAPIDocuments(KindRegistry())
    root = orjson.loads(docs.respond("/openapi/v3", {}, {}).body)
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    current = url.split("hash=")[1]
    fresh = docs.respond("/openapi/v3/apis/apps/v1", {"hash": [current]}, {})
    assert dict(fresh.headers)[b"cache-control"] == b"public, immutable"
    stale = docs.respond("/openapi/v3/apis/apps/v1", {"hash": ["ABC"]}, {})
    assert stale.status == 301
    assert dict(stale.headers)[b"location"].decode() == url
    etag = dict(fresh.headers)[b"etag"].decode()
    assert docs.respond("/openapi/v3/apis/apps/v1", {}, {"if-none-match": etag}).status == 304
