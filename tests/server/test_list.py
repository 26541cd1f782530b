"""list: selectors, limit/continue snapshots, resourceVersion semantics and their 4xx texts."""

from __future__ import annotations

import httpx
import pytest

from kubeloop.server import App

CM = "/api/v1/namespaces/default/configmaps"


async def make(client: httpx.AsyncClient, name: str, ns: str = "default", **labels: str) -> dict[str, object]:
    r = await client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": name, "labels": labels}})
    assert r.status_code == 201, r.text
    return dict(r.json())


def names(body: dict[str, object]) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]  # type: ignore[attr-defined,index]


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=x", ["a", "b"]), ("app!=x", ["c", "d"]), ("app in (x,y)", ["a", "b", "c"]),
    ("app notin (x)", ["c", "d"]), ("tier", ["b"]), ("!tier", ["a", "c", "d"]), ("app=x,tier=web", ["b"]),
])
async def test_label_selectors(client: httpx.AsyncClient, selector: str, expected: list[str]) -> None:
    await make(client, "a", app="x")
    await make(client, "b", app="x", tier="web")
    await make(client, "c", app="y")
    await make(client, "d")
    r = await client.get(CM, params={"labelSelector": selector})
    assert names(r.json()) == expected


async def test_field_selector_on_name_and_namespace(client: httpx.AsyncClient) -> None:
    await make(client, "a")
    await make(client, "b")
    await make(client, "a", ns="kube-system")
    assert names((await client.get(CM, params={"fieldSelector": "metadata.name=a"})).json()) == ["a"]
    assert names((await client.get(CM, params={"fieldSelector": "metadata.name!=a"})).json()) == ["b"]
    cross = (await client.get("/api/v1/configmaps", params={"fieldSelector": "metadata.namespace=kube-system"})).json()
    assert names(cross) == ["a"]


async def test_unsupported_field_selector_is_400(client: httpx.AsyncClient) -> None:
    r = await client.get(CM, params={"fieldSelector": "spec.nodeName=x"})
    assert r.status_code == 400
    assert r.json()["message"] == '"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"'
    r = await client.get("/api/v1/namespaces/default/pods", params={"fieldSelector": "spec.bogus=x"})
    assert (r.status_code, r.json()["message"]) == (400, "field label not supported: spec.bogus")


async def test_pod_field_selectors(client: httpx.AsyncClient) -> None:
    pods = "/api/v1/namespaces/default/pods"
    for name, node in (("p1", "n1"), ("p2", "n2")):
        await client.post(pods, json={"metadata": {"name": name},
                                      "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})
    assert names((await client.get(pods, params={"fieldSelector": "spec.nodeName=n2"})).json()) == ["p2"]
    assert names((await client.get(pods, params={"fieldSelector": "status.phase=Pending"})).json()) == ["p1", "p2"]


async def test_event_involved_object_field_selectors(client: httpx.AsyncClient) -> None:
    events = "/api/v1/namespaces/default/events"
    for name, uid in (("e1", "u1"), ("e2", "u2")):
        await client.post(events, json={"metadata": {"name": name}, "involvedObject": {
            "kind": "ConfigMap", "name": "a", "namespace": "default", "uid": uid}, "reason": "Test"})
    selector = "involvedObject.uid=u2,involvedObject.name=a,involvedObject.namespace=default,involvedObject.kind=ConfigMap"
    r = await client.get(events, params={"fieldSelector": selector, "limit": "500"})
    assert names(r.json()) == ["e2"]


async def test_limit_and_continue_page_through_a_consistent_snapshot(client: httpx.AsyncClient) -> None:
    for i in range(5):
        await make(client, f"c{i}")
    first = (await client.get(CM, params={"limit": "2"})).json()
    assert names(first) == ["c0", "c1"] and first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 3
    rv = first["metadata"]["resourceVersion"]
    await make(client, "c15")  # created after the first page: not in this list
    await client.delete(f"{CM}/c3")  # deleted after the first page: still in this list
    second = (await client.get(CM, params={"limit": "2", "continue": first["metadata"]["continue"]})).json()
    assert names(second) == ["c2", "c3"] and second["metadata"]["resourceVersion"] == rv
    assert second["metadata"]["remainingItemCount"] == 1, "counted in the first page's snapshot"
    third = (await client.get(CM, params={"limit": "2", "continue": second["metadata"]["continue"]})).json()
    assert names(third) == ["c4"] and "continue" not in third["metadata"]
    assert "remainingItemCount" not in third["metadata"]


async def test_limit_with_selector_fills_pages_with_matches(client: httpx.AsyncClient) -> None:
    for i in range(6):
        await make(client, f"c{i}", app="x" if i % 2 else "y")
    page = (await client.get(CM, params={"limit": "2", "labelSelector": "app=x"})).json()
    assert names(page) == ["c1", "c3"]
    assert "remainingItemCount" not in page["metadata"], "etcd3 GetList: unknown when a selector filters"
    rest = (await client.get(CM, params={"limit": "2", "labelSelector": "app=x",
                                         "continue": page["metadata"]["continue"]})).json()
    assert names(rest) == ["c5"]


async def test_continue_token_after_compaction_is_410_expired(app: App, client: httpx.AsyncClient) -> None:
    for i in range(3):
        await make(client, f"c{i}")
    token = (await client.get(CM, params={"limit": "1"})).json()["metadata"]["continue"]
    await make(client, "later")
    await app.state.store.compact(app.state.store.revision)
    r = await client.get(CM, params={"limit": "1", "continue": token})
    assert (r.status_code, r.json()["reason"]) == (410, "Expired")


async def test_garbage_continue_token_is_400(client: httpx.AsyncClient) -> None:
    r = await client.get(CM, params={"continue": "not-a-token"})
    assert r.status_code == 400


async def test_continue_with_resource_version_is_400(client: httpx.AsyncClient) -> None:
    for i in range(2):
        await make(client, f"c{i}")
    token = (await client.get(CM, params={"limit": "1"})).json()["metadata"]["continue"]
    r = await client.get(CM, params={"continue": token, "resourceVersion": "5"})
    assert (r.status_code, r.json()["message"]) == (400, "specifying resource version is not allowed when using continue")


async def test_exact_resource_version_reads_the_past(client: httpx.AsyncClient) -> None:
    a = await make(client, "a")
    await make(client, "b")
    rv = a["metadata"]["resourceVersion"]  # type: ignore[index]
    r = await client.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert names(r.json()) == ["a"] and r.json()["metadata"]["resourceVersion"] == rv
    r = await client.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"})
    assert names(r.json()) == ["a", "b"]


async def test_resource_version_newer_than_the_store_is_504(client: httpx.AsyncClient) -> None:
    r = await client.get(CM, params={"resourceVersion": "999999", "resourceVersionMatch": "NotOlderThan"})
    assert r.status_code == 504
    assert r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


@pytest.mark.parametrize(("params", "message"), [
    ({"resourceVersionMatch": "Exact"},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersion": "0", "resourceVersionMatch": "Exact"},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ({"resourceVersion": "1", "resourceVersionMatch": "Bogus"},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": '
     'supported values: "Exact", "NotOlderThan", ""'),
    ({"sendInitialEvents": "true"},
     'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'),
])
async def test_list_options_validation_is_422(client: httpx.AsyncClient, params: dict[str, str], message: str) -> None:
    r = await client.get(CM, params=params)
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (422, "Invalid", message)


async def test_cross_namespace_list(client: httpx.AsyncClient) -> None:
    await make(client, "a")
    await make(client, "b", ns="kube-system")
    body = (await client.get("/api/v1/configmaps")).json()
    assert sorted(names(body)) == ["a", "b"]
