"""A custom resource's lists carry the CRD's ``spec.names.listKind``, not ``<Kind>List``.

Upstream: apiextensions-apiserver defaults ``names.listKind`` to ``kind + "List"``
(``pkg/apis/apiextensions/v1/defaults.go``), ``crdHandler`` serves lists under the accepted
``listKind``, and the CRD OpenAPI builder names the list schema by it
(``pkg/controller/openapi/builder/builder.go``: ``sampleList``, ``buildListSchema``).
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import httpx
import orjson
from kubernetes import client as k8s

from kubeloop.api import SystemClock
from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore

from ._asgi import stream
from ._uvicorn import serve
from .test_field_validation import establish

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "kind": "Gadget", "listKind": "GadgetCollection"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}  # fmt: skip
BASE = "/apis/example.com/v1/namespaces/default/gadgets"


def _gadget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}}


async def test_list_of_a_custom_resource_has_the_crds_list_kind(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    assert (await client.post(BASE, json=_gadget("g1"))).status_code == 201
    for path in (BASE, "/apis/example.com/v1/gadgets", f"{BASE}?limit=1"):
        body = (await client.get(path)).json()
        assert (body["kind"], body["apiVersion"]) == ("GadgetCollection", "example.com/v1"), path
        assert [i["kind"] for i in body["items"]] == ["Gadget"]
    # deletecollection answers the deleted objects as a list of the same kind.
    deleted = await client.delete(BASE)
    assert deleted.status_code == 200 and deleted.json()["kind"] == "GadgetCollection"


async def test_defaulted_list_kind_is_kind_plus_list(app: App, client: httpx.AsyncClient) -> None:
    crd = copy.deepcopy(CRD)
    del crd["spec"]["names"]["listKind"]
    await establish(app, client, crd)
    stored = (await client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com")).json()
    assert stored["spec"]["names"]["listKind"] == "GadgetList"
    assert (await client.get(BASE)).json()["kind"] == "GadgetList"


async def test_openapi_v3_names_the_list_schema_by_list_kind(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    doc = (await client.get("/openapi/v3/apis/example.com/v1")).json()
    schemas = doc["components"]["schemas"]
    assert "com.example.v1.GadgetList" not in schemas
    list_schema = schemas["com.example.v1.GadgetCollection"]
    assert list_schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "GadgetCollection", "version": "v1"}]
    list_op = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/gadgets"]["get"]
    ref = orjson.dumps(list_op["responses"]).decode()
    assert "#/components/schemas/com.example.v1.GadgetCollection" in ref


async def test_watch_of_a_custom_resource_is_unchanged_by_list_kind(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    await client.post(BASE, json=_gadget("w"))
    async with stream(app, BASE, "watch=true") as watch:
        (event,) = await watch.events(1)
        assert event["object"]["kind"] == "Gadget"


def _official_client_lists(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        ext = k8s.ApiextensionsV1Api(api_client)
        ext.create_custom_resource_definition(CRD)
        custom = k8s.CustomObjectsApi(api_client)
        for _ in range(300):
            try:
                custom.create_namespaced_custom_object("example.com", "v1", "default", "gadgets", _gadget("k"))
                break
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
                time.sleep(0.01)  # the CRD controller has not served the kind yet
        listed: dict[str, Any] = custom.list_namespaced_custom_object("example.com", "v1", "default", "gadgets")
        return listed


async def test_official_kubernetes_client_sees_the_list_kind(store: SqliteStore) -> None:
    real_app = create_app(store=store, clock=SystemClock())
    async with serve(real_app) as url:
        listed = await asyncio.to_thread(_official_client_lists, url)
    assert listed["kind"] == "GadgetCollection"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["k"]
