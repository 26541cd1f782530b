"""What kubectl relies on beyond plain CRUD, over HTTP against the real app and store.

Protobuf request bodies (kubectl's typed commands), ``remainingItemCount`` on pages, watches from a
resourceVersion the store has not reached, upstream's 405 and kind-mismatch texts, strategic merge
refused on custom resources, the ``/scale`` subresource of a CRD, multi-version custom resources
served at the requested version, and CRD ``additionalPrinterColumns`` in Tables.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import httpx

from kubeloop.server import App

from ._asgi import stream

CM = "/api/v1/namespaces/default/configmaps"
PROTOBUF = {"content-type": "application/vnd.kubernetes.protobuf",
            "accept": "application/vnd.kubernetes.protobuf, application/json"}
FIXTURES = Path(__file__).parent.parent / "api" / "protobuf_fixtures"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def test_protobuf_body_from_kubectl_create_configmap_is_answered_in_json(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?fieldManager=kubectl-create&fieldValidation=Strict",
                          content=(FIXTURES / "create_configmap.bin").read_bytes(), headers=PROTOBUF)
    assert r.status_code == 201, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.json()["data"] == {"a": "b", "mode": "fast"}
    stored = (await client.get(f"{CM}/settings")).json()
    assert stored["metadata"]["managedFields"][0]["manager"] == "kubectl-create"


async def test_protobuf_namespace_and_deployment_bodies_create_objects(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/namespaces", content=(FIXTURES / "create_namespace.bin").read_bytes(),
                          headers=PROTOBUF)
    assert r.status_code == 201, r.text
    expected = json.loads((FIXTURES / "create_deployment.json").read_text())
    r = await client.post("/apis/apps/v1/namespaces/default/deployments",
                          content=(FIXTURES / "create_deployment.bin").read_bytes(), headers=PROTOBUF)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["template"]["spec"]["containers"][0]["image"] == \
        expected["spec"]["template"]["spec"]["containers"][0]["image"]


async def test_undecodable_protobuf_is_400_and_an_unknown_kind_415_never_500(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, content=b"k8s\x00\xff\xff\xff", headers=PROTOBUF)
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest")
    r = await client.post(CM, content=b"not protobuf", headers=PROTOBUF)
    assert r.status_code == 400
    assert "does not appear to be a protobuf message" in r.json()["message"]
    envelope = b"k8s\x00\x0a\x18\x0a\x0eexample.com/v1\x12\x06Widget\x12\x00"
    r = await client.post(CM, content=envelope, headers=PROTOBUF)
    assert (r.status_code, r.json()["reason"]) == (415, "UnsupportedMediaType")
    assert "Widget" in r.json()["message"]
    assert (await client.get(CM)).json()["items"] == []


async def test_pages_without_selectors_carry_remaining_item_count(client: httpx.AsyncClient) -> None:
    for i in range(5):
        await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"},
                                    "data": {"even": str(i % 2 == 0)}})
    first = (await client.get(CM, params={"limit": 2})).json()
    assert first["metadata"]["remainingItemCount"] == 3
    second = (await client.get(CM, params={"limit": 2, "continue": first["metadata"]["continue"]})).json()
    assert second["metadata"]["remainingItemCount"] == 1
    last = (await client.get(CM, params={"limit": 2, "continue": second["metadata"]["continue"]})).json()
    assert "remainingItemCount" not in last["metadata"] and "continue" not in last["metadata"]
    # etcd3 GetList only counts when no selector filters the list.
    selected = (await client.get(CM, params={"limit": 1, "fieldSelector": "metadata.name!=c0"})).json()
    assert selected["metadata"]["continue"] and "remainingItemCount" not in selected["metadata"]
    table = (await client.get(CM, params={"limit": 2}, headers={"accept": TABLE})).json()
    assert table["metadata"]["remainingItemCount"] == 3


async def test_watch_from_a_future_resource_version_starts_there(app: App, client: httpx.AsyncClient) -> None:
    now = app.state.store.revision
    async with stream(app, CM, f"watch=true&resourceVersion={now + 2}") as watch:
        for name in ("skipped-1", "skipped-2", "seen"):
            r = await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            assert r.status_code == 201
        (event,) = await watch.events(1)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "seen")
        assert int(event["object"]["metadata"]["resourceVersion"]) == now + 3


async def test_wrong_method_is_go_restful_405_as_a_status(client: httpx.AsyncClient) -> None:
    r = await client.put(CM, json={})
    status = r.json()
    assert (r.status_code, status["reason"]) == (405, "MethodNotAllowed")
    assert status["message"] == "the server does not allow this method on the requested resource"
    assert status["details"]["causes"] == [{"reason": "UnexpectedServerResponse", "message": "405: Method Not Allowed"}]


async def test_body_of_another_kind_cannot_be_converted(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest")
    assert r.json()["message"] == ('Secret in version "v1" cannot be handled as a ConfigMap: '
                                   "converting (v1.Secret) to (core.ConfigMap): unknown conversion")


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [
                 {"name": "v1", "served": True, "storage": True,
                  "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                           "statusReplicasPath": ".status.replicas"}},
                  "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                                               {"name": "Color", "type": "string", "jsonPath": ".spec.color",
                                                "priority": 1}],
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                                "color": {"type": "string"}}},
                      "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}},
             ]},
}  # fmt: skip
V1 = "/apis/example.com/v1/namespaces/default/widgets"
V2 = "/apis/example.com/v2/namespaces/default/widgets"


async def establish(app: App, client: httpx.AsyncClient, crd: dict[str, Any], version: str = "v1") -> None:
    r = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert r.status_code == 201, r.text
    for _ in range(300):
        if app.kinds.get("example.com", version, "widgets") is not None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("CRD never served")


def widget(name: str, version: str = "v1", replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget", "metadata": {"name": name},
            "spec": {"replicas": replicas, "color": "red"}}


async def test_strategic_merge_patch_on_a_custom_resource_is_415(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    await client.post(V1, json=widget("w"))
    r = await client.patch(f"{V1}/w", content=b'{"spec":{"replicas":2}}',
                           headers={"content-type": "application/strategic-merge-patch+json"})
    assert (r.status_code, r.json()["reason"]) == (415, "UnsupportedMediaType")
    assert "application/strategic-merge-patch+json" not in r.json()["message"]
    assert (await client.get(f"{V1}/w")).json()["spec"]["replicas"] == 1


async def test_crd_scale_subresource_reads_and_writes_the_declared_paths(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    await client.post(V1, json=widget("s", replicas=2))
    scale = (await client.get(f"{V1}/s/scale")).json()
    assert (scale["apiVersion"], scale["kind"], scale["spec"]["replicas"]) == ("autoscaling/v1", "Scale", 2)
    r = await client.patch(f"{V1}/s/scale", content=b'{"spec":{"replicas":5}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 5
    assert (await client.get(f"{V1}/s")).json()["spec"]["replicas"] == 5


async def test_custom_resource_tables_use_additional_printer_columns(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    await client.post(V1, json=widget("t", replicas=3))
    table = (await client.get(V1, headers={"accept": TABLE})).json()
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Replicas", 0), ("Color", 1)]
    assert table["rows"][0]["cells"] == ["t", 3, "red"]
    one = (await client.get(f"{V1}/t", headers={"accept": TABLE})).json()
    assert one["rows"][0]["cells"] == ["t", 3, "red"]


async def test_multi_version_custom_resources_answer_at_the_requested_version(
    app: App, client: httpx.AsyncClient
) -> None:
    crd = copy.deepcopy(CRD)
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2.update(name="v2", storage=False)
    crd["spec"]["versions"].append(v2)
    await establish(app, client, crd, "v2")
    created = await client.post(V2, json=widget("m", "v2"))
    assert created.status_code == 201 and created.json()["apiVersion"] == "example.com/v2"
    assert (await client.get(f"{V1}/m")).json()["apiVersion"] == "example.com/v1"
    assert (await client.get(f"{V2}/m")).json()["apiVersion"] == "example.com/v2"
    assert [i["apiVersion"] for i in (await client.get(V1)).json()["items"]] == ["example.com/v1"]
    assert [i["apiVersion"] for i in (await client.get(V2)).json()["items"]] == ["example.com/v2"]
    patched = await client.patch(f"{V2}/m", content=b'{"spec":{"color":"blue"}}',
                                 headers={"content-type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["apiVersion"] == "example.com/v2"
    async with stream(app, V2, "watch=true") as watch:
        (event,) = await watch.events(1)
        assert event["object"]["apiVersion"] == "example.com/v2"


async def test_namespaces_are_labelled_with_their_name(client: httpx.AsyncClient) -> None:
    # namespace strategy Canonicalize: kubectl get ns --show-labels shows kubernetes.io/metadata.name.
    r = await client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "team", "labels": {"a": "b"}}})
    assert r.json()["metadata"]["labels"] == {"a": "b", "kubernetes.io/metadata.name": "team"}
    r = await client.patch("/api/v1/namespaces/team", content=b'{"metadata":{"labels":{"kubernetes.io/metadata.name":"x"}}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.json()["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team"
    default = (await client.get("/api/v1/namespaces/default")).json()
    assert default["metadata"]["labels"] == {"kubernetes.io/metadata.name": "default"}


async def test_deletecollection_of_custom_resources_answers_at_the_requested_version(app: App, client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(CRD)
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2.update(name="v2", storage=False)
    crd["spec"]["versions"].append(v2)
    await establish(app, client, crd, "v2")
    for name in ("a", "b"):
        assert (await client.post(V2, json=widget(name, "v2"))).status_code == 201
    assert (await client.delete(f"{V2}/a")).json()["kind"] == "Status"  # custom kinds answer a Status
    collection = await client.delete(V2)
    assert collection.status_code == 200, collection.text
    assert [i["apiVersion"] for i in collection.json()["items"]] == ["example.com/v2"]
