"""A field selector's ``apiVersion`` defaults to ``v1`` in pods and in workloads' pod templates alike.

Upstream: k/k ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_ObjectFieldSelector``, reached by the
generated defaulters (``zz_generated.defaults.go``) through a pod spec's containers' ``env[].valueFrom``,
its downwardAPI volumes and its projected volumes' downwardAPI sources, for ``Pod`` and for the
``spec.template.spec`` of ``Deployment``, ``ReplicaSet`` and ``StatefulSet``.
"""

from __future__ import annotations

from typing import Any

import httpx

NAME_REF = {"fieldRef": {"fieldPath": "metadata.name"}}
PINNED_REF = {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}


def spec_with_field_refs() -> dict[str, Any]:
    return {
        "initContainers": [{"name": "i", "image": "busybox", "env": [{"name": "N", "valueFrom": dict(NAME_REF)}]}],
        "containers": [{"name": "c", "image": "nginx",
                        "env": [{"name": "A", "value": "x"}, {"name": "N", "valueFrom": {**NAME_REF}},
                                {"name": "S", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]}],
        "volumes": [
            {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                                    {"path": "cpu", "resourceFieldRef": {"containerName": "c",
                                                                                         "resource": "limits.cpu"}}]}},
            {"name": "p", "projected": {"sources": [
                {"downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"configMap": {"name": "cfg"}}]}},
        ],
    }


def field_ref_versions(spec: dict[str, Any]) -> list[Any]:
    versions = [env["valueFrom"]["fieldRef"].get("apiVersion")
                for key in ("initContainers", "containers") for container in spec[key]
                for env in container.get("env", []) if "valueFrom" in env]
    versions += [item["fieldRef"].get("apiVersion")
                 for item in spec["volumes"][0]["downwardAPI"]["items"] if "fieldRef" in item]
    versions += [item["fieldRef"].get("apiVersion")
                 for item in spec["volumes"][1]["projected"]["sources"][0]["downwardAPI"]["items"]]
    return versions


async def test_a_pods_field_selectors_get_api_version_v1(client: httpx.AsyncClient) -> None:
    spec = spec_with_field_refs()
    r = await client.post("/api/v1/namespaces/default/pods",
                          json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    assert r.status_code == 201, r.text
    assert field_ref_versions(r.json()["spec"]) == ["v1"] * 5
    resource_ref = r.json()["spec"]["volumes"][0]["downwardAPI"]["items"][1]
    assert "fieldRef" not in resource_ref and "apiVersion" not in resource_ref["resourceFieldRef"]


async def test_a_templates_field_selectors_get_it_too(client: httpx.AsyncClient) -> None:
    template = {"metadata": {"labels": {"app": "w"}}, "spec": spec_with_field_refs()}
    base = {"selector": {"matchLabels": {"app": "w"}}, "template": template}
    kinds = {"deployments": ("Deployment", {}), "replicasets": ("ReplicaSet", {}),
             "statefulsets": ("StatefulSet", {"serviceName": "w"})}
    for plural, (kind, extra) in kinds.items():
        body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": {**base, **extra}}
        r = await client.post(f"/apis/apps/v1/namespaces/default/{plural}", json=body)
        assert r.status_code == 201, r.text
        assert field_ref_versions(r.json()["spec"]["template"]["spec"]) == ["v1"] * 5, kind


async def test_a_version_that_was_set_is_kept(client: httpx.AsyncClient) -> None:
    spec = {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "S", "valueFrom": dict(PINNED_REF)}]}]}
    r = await client.post("/api/v1/namespaces/default/pods",
                          json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["containers"][0]["env"][0]["valueFrom"] == PINNED_REF


async def test_a_pod_stored_without_the_version_can_still_be_updated(client: httpx.AsyncClient) -> None:
    # The body sent again without apiVersion is defaulted the same way, so nothing immutable changed.
    spec = {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "N", "valueFrom": dict(NAME_REF)}]}]}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    assert (await client.post("/api/v1/namespaces/default/pods", json=body)).status_code == 201
    body["metadata"]["labels"] = {"a": "b"}
    r = await client.put("/api/v1/namespaces/default/pods/p", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
