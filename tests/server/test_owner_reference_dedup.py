"""Duplicate ownerReferences on writes: the server keeps the first of equal entries and warns, over HTTP.

Upstream: apiserver ``pkg/endpoints/handlers/rest.go`` (``dedupOwnerReferences``,
``dedupOwnerReferencesAndAddWarning``, ``DuplicateOwnerReferencesWarningFormat`` and
``DuplicateOwnerReferencesAfterMutatingAdmissionWarningFormat``), called by ``create.go`` and
``update.go`` before and after mutating admission and by ``patch.go`` after it only; server-side apply
refuses an applied configuration with a repeated uid (``managedfields`` ``structuredmerge.go``: "Don't
allow duplicates in the applied object", the live object may hold them).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin
from kubeloop.store import SqliteStore
from kubeloop.testing import rewrite_stored

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
ADVICE = ("API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; "
          "please fix your requests; duplicate UID(s) observed: ")
BEFORE = ".metadata.ownerReferences contains duplicate entries; " + ADVICE
AFTER = ".metadata.ownerReferences contains duplicate entries after mutating admission happens; " + ADVICE
MERGE = {"content-type": "application/merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}


def ref(uid: str, name: str = "owner", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid, **extra}


def configmap(name: str, refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def warning(text: str) -> str:
    return f'299 - "{text}"'


def warnings(r: httpx.Response) -> list[str]:
    return r.headers.get_list("warning")


async def store_with_duplicates(app: App, store: SqliteStore, name: str, refs: list[dict[str, Any]],
                                key: str = "") -> None:
    """Old data: rewrite a stored object (a ConfigMap by default) with ``refs`` as they are (a server
    before 1.20 stored duplicates)."""
    await rewrite_stored(store, key or f"/registry/core/configmaps/default/{name}",
                         lambda obj: obj["metadata"].__setitem__("ownerReferences", refs))


async def test_create_keeps_the_first_of_equal_references_and_warns(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("a", [ref("u1"), ref("u2", "other"), ref("u1")]))
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1"), ref("u2", "other")]  # the answer is deduplicated
    stored = (await client.get(f"{CM}/a")).json()
    assert stored["metadata"]["ownerReferences"] == [ref("u1"), ref("u2", "other")]


async def test_every_dropped_entry_names_its_uid_in_order(client: httpx.AsyncClient) -> None:
    refs = [ref("u1"), ref("u2", "b"), ref("u1"), ref("u2", "b"), ref("u1")]
    r = await client.post(CM, json=configmap("a", refs))
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1, u2, u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1"), ref("u2", "b")]


async def test_same_uid_with_another_field_different_is_kept(client: httpx.AsyncClient) -> None:
    # rest.go dedupOwnerReferences compares whole entries (apiequality.Semantic.DeepEqual), not uids.
    refs = [ref("u1"), ref("u1", blockOwnerDeletion=True), ref("u1", "renamed")]
    r = await client.post(CM, json=configmap("a", refs))
    assert r.status_code == 201, r.text
    assert warnings(r) == []
    assert r.json()["metadata"]["ownerReferences"] == refs


async def test_a_null_optional_field_equals_an_absent_one(client: httpx.AsyncClient) -> None:
    # Decoded into the Go struct, ``controller: null`` and no ``controller`` are the same nil pointer.
    r = await client.post(CM, json=configmap("a", [ref("u1"), ref("u1", controller=None)]))
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]


async def test_a_dry_run_create_answers_the_deduplicated_object(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?dryRun=All", json=configmap("a", [ref("u1"), ref("u1")]))
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_the_warning_follows_field_validation_warnings(client: httpx.AsyncClient) -> None:
    body = configmap("a", [ref("u1"), ref("u1")])
    body["bogus"] = 1
    r = await client.post(CM, json=body)
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning('unknown field \\"bogus\\"'), warning(BEFORE + "u1")]


async def test_put_deduplicates_the_body_before_admission(client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a", [ref("u1")]))).status_code == 201
    r = await client.put(f"{CM}/a", json=configmap("a", [ref("u1"), ref("u2"), ref("u2")]))
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(BEFORE + "u2")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1"), ref("u2")]
    assert (await client.get(f"{CM}/a")).json()["metadata"]["ownerReferences"] == [ref("u1"), ref("u2")]


async def test_put_that_creates_deduplicates_too(client: httpx.AsyncClient) -> None:
    # A Lease allows create on update (PUT of a missing object creates it: handlers/update.go, one dedup).
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "ownerReferences": [ref("u1"), ref("u1")]}, "spec": {}}
    r = await client.put(f"{leases}/l", json=body)
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]


async def test_status_put_deduplicates_the_body(client: httpx.AsyncClient) -> None:
    labels = {"app": "d"}
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "ownerReferences": [ref("u1")]},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    created = await client.post(DEPLOYMENTS, json=deployment)
    assert created.status_code == 201, created.text
    body = created.json()
    body["metadata"]["ownerReferences"] = [ref("u1"), ref("u1")]
    body["status"] = {"observedGeneration": 1}
    r = await client.put(f"{DEPLOYMENTS}/d/status", json=body)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(BEFORE + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    assert r.json()["status"]["observedGeneration"] == 1


async def test_merge_patch_deduplicates_after_admission_only(client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a"))).status_code == 201
    patch = {"metadata": {"ownerReferences": [ref("u1"), ref("u1")]}}
    r = await client.patch(f"{CM}/a", content=json.dumps(patch), headers=MERGE)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(AFTER + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]


async def test_json_patch_adding_an_equal_entry_is_deduplicated(client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a", [ref("u1")]))).status_code == 201
    patch = [{"op": "add", "path": "/metadata/ownerReferences/-", "value": ref("u1")}]
    r = await client.patch(f"{CM}/a", content=json.dumps(patch), headers=JSON_PATCH)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(AFTER + "u1")]
    # Nothing changed once deduplicated: no new resourceVersion (the write is a no-op).
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    assert r.json()["metadata"]["resourceVersion"] == (await client.get(f"{CM}/a")).json()["metadata"]["resourceVersion"]


async def test_any_patch_cleans_duplicates_stored_from_before(app: App, store: SqliteStore,
                                                               client: httpx.AsyncClient) -> None:
    for name, headers, patch in (
        ("json", JSON_PATCH, json.dumps([{"op": "add", "path": "/metadata/labels", "value": {"x": "1"}}])),
        ("merge", MERGE, json.dumps({"metadata": {"labels": {"x": "1"}}})),
        ("strategic", STRATEGIC, json.dumps({"metadata": {"labels": {"x": "1"}}})),
    ):
        assert (await client.post(CM, json=configmap(name))).status_code == 201
        await store_with_duplicates(app, store, name, [ref("u1"), ref("u1"), ref("u2")])
        r = await client.patch(f"{CM}/{name}", content=patch, headers=headers)
        assert r.status_code == 200, (name, r.text)
        assert warnings(r) == [warning(AFTER + "u1")], name
        stored = (await client.get(f"{CM}/{name}")).json()
        assert stored["metadata"]["ownerReferences"] == [ref("u1"), ref("u2")], name
        assert stored["metadata"]["labels"] == {"x": "1"}, name


async def test_apply_refuses_an_applied_configuration_naming_a_uid_twice(client: httpx.AsyncClient) -> None:
    # Keyed by uid alone (ownerReferences is a list map on uid): entries that differ elsewhere count too.
    body = configmap("a", [ref("u1"), ref("u1", "other"), ref("u2"), ref("u2")])
    body["metadata"]["namespace"] = "default"
    r = await client.patch(f"{CM}/a?fieldManager=m", content=json.dumps(body), headers=APPLY)
    assert r.status_code == 500, r.text
    assert r.json()["message"] == (
        "failed to create typed patch object (default/a; /v1, Kind=ConfigMap): errors:\n"
        '  .metadata.ownerReferences: duplicate entries for key [uid="u1"]\n'
        '  .metadata.ownerReferences: duplicate entries for key [uid="u2"]')
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_apply_to_an_object_stored_with_duplicates_cleans_them(app: App, store: SqliteStore,
                                                                    client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a"))).status_code == 201
    await store_with_duplicates(app, store, "a", [ref("u1"), ref("u1")])
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"j": "w"}}
    r = await client.patch(f"{CM}/a?fieldManager=m", content=json.dumps(applied), headers=APPLY)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(AFTER + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    assert r.json()["data"] == {"k": "v", "j": "w"}


async def test_scale_leaves_the_parent_references_alone(app: App, store: SqliteStore,
                                                        client: httpx.AsyncClient) -> None:
    # The scale subresource's admission and dedup act on the Scale, not on the Deployment behind it.
    labels = {"app": "d"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": labels}, "template": {
                      "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert (await client.post(DEPLOYMENTS, json=deployment)).status_code == 201
    await store_with_duplicates(app, store, "d", [ref("u1"), ref("u1")], "/registry/apps/deployments/default/d")
    r = await client.patch(f"{DEPLOYMENTS}/d/scale", content=json.dumps({"spec": {"replicas": 3}}), headers=MERGE)
    assert r.status_code == 200, r.text
    assert warnings(r) == []
    stored = (await client.get(f"{DEPLOYMENTS}/d")).json()
    assert stored["spec"]["replicas"] == 3
    assert stored["metadata"]["ownerReferences"] == [ref("u1"), ref("u1")]


class DuplicatingPlugin(MutatingPlugin):
    """Mutating: appends a copy of a ConfigMap's first owner reference (a buggy webhook would)."""

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation in ("CREATE", "UPDATE") and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        refs = obj["metadata"].get("ownerReferences")
        if refs:
            refs.append(dict(refs[0]))


async def test_duplicates_added_by_mutating_admission_get_the_second_warning(app: App,
                                                                            client: httpx.AsyncClient) -> None:
    app.admission.append(DuplicatingPlugin())
    r = await client.post(CM, json=configmap("a", [ref("u1"), ref("u1")]))
    assert r.status_code == 201, r.text
    assert warnings(r) == [warning(BEFORE + "u1"), warning(AFTER + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    body = r.json()
    body["data"] = {"k": "changed"}
    r = await client.put(f"{CM}/a", json=body)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(AFTER + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]
    r = await client.patch(f"{CM}/a", content=json.dumps({"data": {"k": "again"}}), headers=MERGE)
    assert r.status_code == 200, r.text
    assert warnings(r) == [warning(AFTER + "u1")]
    assert r.json()["metadata"]["ownerReferences"] == [ref("u1")]


async def test_writes_without_duplicates_carry_no_warning(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("a", [ref("u1"), ref("u2")]))
    assert r.status_code == 201 and warnings(r) == []
    r = await client.put(f"{CM}/a", json={**r.json(), "data": {"k": "w"}})
    assert r.status_code == 200 and warnings(r) == []
    r = await client.patch(f"{CM}/a", content=json.dumps({"data": {"k": "x"}}), headers=MERGE)
    assert r.status_code == 200 and warnings(r) == []
