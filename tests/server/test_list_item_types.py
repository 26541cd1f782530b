"""List items of built-in kinds carry no kind/apiVersion, as kube-apiserver's typed lists
(kubernetes#3030, #63676, #98925); custom resources', watch events' and Table rows' objects keep them."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.server import App

from ._asgi import stream
from .test_kubectl_compat import CRD, V1, establish

CM = "/api/v1/namespaces/default/configmaps"
TYPE_META = ("kind", "apiVersion")


def typeless(items: list[dict[str, Any]]) -> bool:
    return bool(items) and not any(key in item for item in items for key in TYPE_META)


async def _configmaps(client: httpx.AsyncClient, *bodies: dict[str, Any]) -> None:
    for body in bodies:
        r = await client.post(CM, content=orjson.dumps(body), headers={"content-type": "application/json"})
        assert r.status_code == 201, r.text


async def test_built_in_list_items_have_no_kind_or_api_version_in_any_key_order(client: httpx.AsyncClient) -> None:
    await _configmaps(
        client,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}},
        {"apiVersion": "v1", "data": {"k": "v"}, "kind": "ConfigMap", "metadata": {"name": "b"}},  # kubectl's order
        {"metadata": {"name": "c"}, "data": {"k": "v"}},
    )
    body = (await client.get(CM)).json()
    assert (body["kind"], body["apiVersion"]) == ("ConfigMapList", "v1")
    assert typeless(body["items"])
    assert [(i["metadata"]["name"], i["data"]) for i in body["items"]] == [(n, {"k": "v"}) for n in "abc"]
    got = (await client.get(f"{CM}/b")).json()
    assert list(got)[:2] == ["apiVersion", "kind"] and (got["kind"], got["apiVersion"]) == ("ConfigMap", "v1")


async def test_every_list_variant_of_a_built_in_kind_drops_item_kinds(client: httpx.AsyncClient) -> None:
    await _configmaps(client, *({"metadata": {"name": f"c{i}", "labels": {"n": str(i % 2)}}} for i in range(5)))
    rv = (await client.get(CM)).json()["metadata"]["resourceVersion"]
    variants = [
        {"limit": "2"}, {"labelSelector": "n=1"}, {"fieldSelector": "metadata.name=c3"},
        {"resourceVersion": "0"}, {"resourceVersion": rv, "resourceVersionMatch": "Exact"},
        {"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"},
    ]
    for params in variants:
        assert typeless((await client.get(CM, params=params)).json()["items"]), params
    first = (await client.get(CM, params={"limit": "2"})).json()
    rest = (await client.get(CM, params={"limit": "2", "continue": first["metadata"]["continue"]})).json()
    assert typeless(rest["items"]) and len(rest["items"]) == 2
    cluster = (await client.get("/api/v1/configmaps")).json()
    assert typeless(cluster["items"])
    yaml = await client.get(CM, headers={"accept": "application/yaml"})
    assert yaml.status_code == 200 and b"kind: ConfigMap\n" not in yaml.content and b"kind: ConfigMapList" in yaml.content


async def test_deletecollection_answers_the_deleted_objects_as_a_typed_list(client: httpx.AsyncClient) -> None:
    await _configmaps(client, {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}})
    r = await client.request("DELETE", CM)
    assert r.status_code == 200
    body = r.json()
    assert body["kind"] == "ConfigMapList" and typeless(body["items"])
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]


async def test_deletecollection_answers_yaml_when_asked(client: httpx.AsyncClient) -> None:
    await _configmaps(client, {"metadata": {"name": "a"}})
    r = await client.request("DELETE", CM, headers={"accept": "application/yaml"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/yaml")
    assert b"kind: ConfigMapList" in r.content and b"kind: ConfigMap\n" not in r.content and b"name: a" in r.content


async def test_custom_resource_list_items_keep_kind_and_api_version(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client, CRD)
    for name in ("w1", "w2"):
        r = await client.post(V1, json={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
                                        "spec": {"replicas": 1}})
        assert r.status_code == 201, r.text
    for params in ({}, {"limit": "1"}):
        items = (await client.get(V1, params=params)).json()["items"]
        assert items and all((i["kind"], i["apiVersion"]) == ("Widget", "example.com/v1") for i in items)
    deleted = (await client.request("DELETE", V1)).json()["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in deleted] == [("Widget", "w1"), ("Widget", "w2")]


async def test_watch_events_of_a_built_in_kind_keep_kind_and_api_version(app: App, client: httpx.AsyncClient) -> None:
    await _configmaps(client, {"metadata": {"name": "a"}})
    async with stream(app, CM, "watch=true") as s:
        [added] = await s.events(1)
        await _configmaps(client, {"apiVersion": "v1", "data": {}, "kind": "ConfigMap", "metadata": {"name": "b"}})
        [second] = await s.events(1)
    for event in (added, second):
        assert (event["object"]["kind"], event["object"]["apiVersion"]) == ("ConfigMap", "v1")


async def test_table_rows_hold_partial_metadata_or_the_typed_object(client: httpx.AsyncClient) -> None:
    # handlers/response.go asTable: IncludeObject converts each row's object to the request's version
    # (the scheme sets its kind); Metadata gives a PartialObjectMetadata.
    await _configmaps(client, {"metadata": {"name": "a"}})
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    rows = (await client.get(CM, params={"includeObject": "Object"}, headers={"accept": table})).json()["rows"]
    assert (rows[0]["object"]["kind"], rows[0]["object"]["apiVersion"]) == ("ConfigMap", "v1")
    rows = (await client.get(CM, headers={"accept": table})).json()["rows"]
    assert (rows[0]["object"]["kind"], rows[0]["object"]["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
