"""NamespaceLifecycle on updates: a namespaced object whose namespace is gone can be deleted, not changed.

Upstream: apiserver ``pkg/admission/plugin/namespace/lifecycle/admission.go`` ``Admit`` (release-1.32):
the plugin handles CREATE, UPDATE and DELETE; Namespaces themselves (but the three immortal ones'
DELETE), cluster-scoped objects, DELETEs and ``localsubjectaccessreviews`` are always allowed; any other
CREATE or UPDATE (PUT, every patch type, apply, subresources) in a namespace that does not exist is the
namespace's 404; only a CREATE is refused in a Terminating namespace. Updates run admission after the
object is read (``registry/generic/registry/store.go`` Update), so a missing object is its own 404 first.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from kubeloop.api import ResourceInfo
from kubeloop.server import NamespaceLifecycle
from kubeloop.store import SqliteStore

NS = "/api/v1/namespaces"
CM = "/api/v1/namespaces/gone/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/gone/deployments"
MERGE = {"content-type": "application/merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}
NAMESPACE_NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": 'namespaces "gone" not found', "reason": "NotFound",
                       "details": {"name": "gone", "kind": "namespaces"}, "code": 404}


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def terminating_namespace(client: httpx.AsyncClient) -> None:
    """Namespace ``gone`` with a ConfigMap and a Deployment in it, deleted: Terminating (no namespace
    controller runs here to empty it, so it keeps its ``kubernetes`` finalizer)."""
    assert (await client.post(NS, json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
            ).status_code == 201
    assert (await client.post(CM, json=configmap("c"))).status_code == 201
    assert (await client.post(DEPLOYMENTS, json=deployment("d"))).status_code == 201
    assert (await client.delete(f"{NS}/gone")).status_code == 200
    assert (await client.get(f"{NS}/gone")).json()["status"]["phase"] == "Terminating"


async def namespace_gone_with_content_left(client: httpx.AsyncClient) -> None:
    """Namespace ``gone`` finalized away while a ConfigMap and a Deployment are still stored in it
    (what a finalize that skipped the namespace controller leaves behind)."""
    await terminating_namespace(client)
    ns = (await client.get(f"{NS}/gone")).json()
    ns["spec"]["finalizers"] = []
    assert (await client.put(f"{NS}/gone/finalize", json=ns)).status_code == 200
    assert (await client.get(f"{NS}/gone")).status_code == 404
    assert (await client.get(f"{CM}/c")).status_code == 200


async def test_put_in_a_missing_namespace_is_the_namespace_404(client: httpx.AsyncClient) -> None:
    await namespace_gone_with_content_left(client)
    stored = (await client.get(f"{CM}/c")).json()
    r = await client.put(f"{CM}/c", json={**stored, "data": {"k": "w"}})
    assert r.status_code == 404
    assert r.json() == NAMESPACE_NOT_FOUND
    assert (await client.get(f"{CM}/c")).json() == stored


async def test_every_patch_type_in_a_missing_namespace_is_the_namespace_404(client: httpx.AsyncClient) -> None:
    await namespace_gone_with_content_left(client)
    patches = [
        (MERGE, json.dumps({"data": {"k": "w"}}), ""),
        (JSON_PATCH, json.dumps([{"op": "replace", "path": "/data/k", "value": "w"}]), ""),
        (STRATEGIC, json.dumps({"data": {"k": "w"}}), ""),
        (APPLY, json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"j": "w"}}),
         "?fieldManager=m"),
    ]
    for headers, body, query in patches:
        r = await client.patch(f"{CM}/c{query}", content=body, headers=headers)
        assert r.status_code == 404, (headers, r.text)
        assert r.json() == NAMESPACE_NOT_FOUND, headers
    assert (await client.get(f"{CM}/c")).json()["data"] == {"k": "v"}


async def test_dry_run_and_subresource_updates_are_refused_too(client: httpx.AsyncClient) -> None:
    await namespace_gone_with_content_left(client)
    stored = (await client.get(f"{DEPLOYMENTS}/d")).json()
    r = await client.put(f"{DEPLOYMENTS}/d?dryRun=All", json=stored)
    assert r.status_code == 404 and r.json() == NAMESPACE_NOT_FOUND
    r = await client.put(f"{DEPLOYMENTS}/d/status", json={**stored, "status": {"observedGeneration": 1}})
    assert r.status_code == 404 and r.json() == NAMESPACE_NOT_FOUND
    r = await client.patch(f"{DEPLOYMENTS}/d/scale", content=json.dumps({"spec": {"replicas": 2}}), headers=MERGE)
    assert r.status_code == 404 and r.json() == NAMESPACE_NOT_FOUND


async def test_a_missing_object_is_its_own_404_before_the_namespace(client: httpx.AsyncClient) -> None:
    await namespace_gone_with_content_left(client)
    r = await client.patch(f"{CM}/absent", content=json.dumps({"data": {"k": "w"}}), headers=MERGE)
    assert r.status_code == 404
    assert r.json()["message"] == 'configmaps "absent" not found'
    # An apply that would create is a CREATE: the namespace's 404.
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "absent"}}
    r = await client.patch(f"{CM}/absent?fieldManager=m", content=json.dumps(applied), headers=APPLY)
    assert r.status_code == 404 and r.json() == NAMESPACE_NOT_FOUND


async def test_delete_and_reads_in_a_missing_namespace_are_allowed(client: httpx.AsyncClient) -> None:
    await namespace_gone_with_content_left(client)
    assert (await client.get(CM)).json()["items"][0]["metadata"]["name"] == "c"
    r = await client.delete(f"{CM}/c")
    assert r.status_code == 200, r.text
    assert (await client.get(f"{CM}/c")).status_code == 404


async def test_updates_in_a_terminating_namespace_are_allowed_creates_are_not(client: httpx.AsyncClient) -> None:
    await terminating_namespace(client)
    stored = (await client.get(f"{CM}/c")).json()
    r = await client.put(f"{CM}/c", json={**stored, "data": {"k": "put"}})
    assert r.status_code == 200, r.text
    r = await client.patch(f"{CM}/c", content=json.dumps({"metadata": {"finalizers": None}}), headers=MERGE)
    assert r.status_code == 200, r.text
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"j": "w"}}
    r = await client.patch(f"{CM}/c?fieldManager=m", content=json.dumps(applied), headers=APPLY)
    assert r.status_code == 200, r.text
    r = await client.post(CM, json=configmap("new"))
    assert r.status_code == 403
    assert r.json()["details"]["causes"][0]["reason"] == "NamespaceTerminating"


async def test_namespaces_and_cluster_scoped_objects_are_not_judged(client: httpx.AsyncClient) -> None:
    await terminating_namespace(client)
    # The Namespace itself: every operation allowed (here a label on a Terminating one).
    r = await client.patch(f"{NS}/gone", content=json.dumps({"metadata": {"labels": {"x": "1"}}}), headers=MERGE)
    assert r.status_code == 200, r.text
    # A cluster-scoped object has no namespace to judge.
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}
    assert (await client.post("/api/v1/persistentvolumes", json=pv)).status_code == 201
    r = await client.patch("/api/v1/persistentvolumes/pv", content=json.dumps({"metadata": {"labels": {"x": "1"}}}),
                           headers=MERGE)
    assert r.status_code == 200, r.text



async def test_an_access_review_is_never_judged(store: SqliteStore) -> None:
    # isAccessReview: a 404 would tell the caller whether the namespace exists. (The server does not
    # serve localsubjectaccessreviews yet; the plugin lets them through for when it does, or for a chain
    # that admits them.)
    reviews = ResourceInfo("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
                           "localsubjectaccessreview", namespaced=True)
    plugin = NamespaceLifecycle(store)
    assert not plugin.handles("CREATE", reviews)
    configmaps = ResourceInfo("", "v1", "ConfigMap", "configmaps", "configmap", namespaced=True)
    assert [op for op in ("CREATE", "UPDATE", "DELETE") if plugin.handles(op, configmaps)] == ["CREATE", "UPDATE"]
