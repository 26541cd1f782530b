"""Create, get, list, update, patch and delete through the HTTP API (one kind end to end)."""

from __future__ import annotations

import httpx

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_returns_201_with_server_set_metadata(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("a", x="1"))
    assert r.status_code == 201
    meta = r.json()["metadata"]
    assert meta["namespace"] == "default"
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"].endswith("Z")
    assert "generation" not in meta


async def test_get_returns_the_stored_object(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a", x="1"))).json()
    r = await client.get(f"{CM}/a")
    assert r.status_code == 200
    assert r.json() == created


async def test_get_missing_is_404_status(client: httpx.AsyncClient) -> None:
    r = await client.get(f"{CM}/nope")
    assert r.status_code == 404
    assert r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"}, "code": 404,
    }


async def test_create_existing_is_409_already_exists(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    r = await client.post(CM, json=configmap("a"))
    assert r.status_code == 409
    assert r.json()["reason"] == "AlreadyExists"
    assert r.json()["message"] == 'configmaps "a" already exists'


async def test_list_carries_store_revision_and_items(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    b = (await client.post(CM, json=configmap("b"))).json()
    r = await client.get(CM)
    body = r.json()
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    assert int(body["metadata"]["resourceVersion"]) >= int(b["metadata"]["resourceVersion"])


async def test_empty_list_has_empty_items_array(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/namespaces/kube-public/configmaps")
    assert r.json()["items"] == []


async def test_update_with_current_resource_version_bumps_it(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a", x="1"))).json()
    created["data"] = {"x": "2"}
    r = await client.put(f"{CM}/a", json=created)
    assert r.status_code == 200
    assert r.json()["data"] == {"x": "2"}
    assert int(r.json()["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_update_with_stale_resource_version_is_a_conflict(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a", x="1"))).json()
    created["data"] = {"x": "2"}
    await client.put(f"{CM}/a", json=created)
    created["data"] = {"x": "3"}
    r = await client.put(f"{CM}/a", json=created)
    assert r.status_code == 409
    assert r.json()["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert (await client.get(f"{CM}/a")).json()["data"] == {"x": "2"}


async def test_merge_patch_changes_only_the_patched_fields(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", x="1"))
    r = await client.patch(f"{CM}/a", content=b'{"data":{"y":"2"}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200
    assert r.json()["data"] == {"x": "1", "y": "2"}


async def test_delete_answers_success_status_and_removes(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a"))).json()
    r = await client.delete(f"{CM}/a")
    assert r.status_code == 200
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]}}
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_kubectl_table_accept_gets_a_table(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", x="1"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    r = await client.get(CM, params={"limit": "500"}, headers={"accept": accept})
    assert r.headers["content-type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = r.json()
    assert table["kind"] == "Table" and [row["cells"][0] for row in table["rows"]] == ["a"]
    r = await client.get(f"{CM}/a", headers={"accept": "application/json"})
    assert r.json()["kind"] == "ConfigMap"
