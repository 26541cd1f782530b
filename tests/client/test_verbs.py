"""Client verbs against a fake API server speaking the real wire protocol."""

from __future__ import annotations

import orjson
import pytest
from _fakeapi import WIDGETS, FakeApi

from kubeloop.api import AlreadyExists, Conflict, KindRegistry, NotFound
from kubeloop.client import NAMESPACE_ALL, Client

REG = KindRegistry()
CM = REG.by_kind("", "ConfigMap")
DEPLOY = REG.by_kind("apps", "Deployment")
NS = REG.by_kind("", "Namespace")
assert CM and DEPLOY and NS


def cm(name: str, ns: str | None = None, **data: str) -> dict:
    meta: dict = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def test_create_then_get_returns_the_stored_object(client: Client) -> None:
    created = await client.create(CM, cm("a", x="1"))
    got = await client.get(CM, "a")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["namespace"] == "default"
    assert got["data"] == {"x": "1"}


async def test_create_uses_the_objects_own_namespace_before_the_default(client: Client, api: FakeApi) -> None:
    await client.create(CM, cm("a", "team"))
    assert api.requests[-1].path == "/api/v1/namespaces/team/configmaps"
    assert (await client.get(CM, "a", namespace="team"))["metadata"]["namespace"] == "team"


async def test_cluster_scoped_kinds_ignore_the_namespace(client: Client, api: FakeApi) -> None:
    await client.create(NS, {"metadata": {"name": "n1"}}, namespace="ignored")
    assert api.requests[-1].path == "/api/v1/namespaces"


async def test_creating_an_existing_object_is_already_exists(client: Client) -> None:
    await client.create(CM, cm("a"))
    with pytest.raises(AlreadyExists, match='configmaps "a" already exists'):
        await client.create(CM, cm("a"))


async def test_get_of_a_missing_object_is_not_found_with_the_server_message(client: Client) -> None:
    with pytest.raises(NotFound) as info:
        await client.get(CM, "nope")
    assert info.value.message == 'configmaps "nope" not found'
    assert info.value.details["name"] == "nope"


async def test_update_with_stale_resource_version_is_a_conflict(client: Client) -> None:
    first = await client.create(CM, cm("a", x="1"))
    first["data"] = {"x": "2"}
    await client.update(CM, first)
    first["data"] = {"x": "3"}
    with pytest.raises(Conflict):
        await client.update(CM, first)


@pytest.mark.parametrize(
    ("patch_type", "body", "content_type"),
    [
        ("merge", {"data": {"y": "2"}}, "application/merge-patch+json"),
        ("strategic", {"data": {"y": "2"}}, "application/strategic-merge-patch+json"),
        ("json", [{"op": "add", "path": "/data/y", "value": "2"}], "application/json-patch+json"),
    ],
)
async def test_patch_sends_the_content_type_of_its_patch_type(
    client: Client, api: FakeApi, patch_type: str, body: object, content_type: str
) -> None:
    await client.create(CM, cm("a", x="1"))
    out = await client.patch(CM, "a", body, patch_type=patch_type)  # type: ignore[arg-type]
    assert api.requests[-1].headers["content-type"] == content_type
    assert out["data"] == {"x": "1", "y": "2"}


async def test_apply_is_a_patch_with_field_manager_and_force(client: Client, api: FakeApi) -> None:
    out = await client.apply(CM, cm("a", x="1"), field_manager="me", force=True)
    req = api.requests[-1]
    assert req.method == "PATCH"
    assert req.path == "/api/v1/namespaces/default/configmaps/a"
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    assert req.query == {"fieldManager": "me", "force": "true"}
    assert out["data"] == {"x": "1"}


async def test_dry_run_is_sent_as_dry_run_all(client: Client, api: FakeApi) -> None:
    await client.create(CM, cm("a"), dry_run=True, field_manager="m")
    assert api.requests[-1].query == {"dryRun": "All", "fieldManager": "m"}


async def test_delete_sends_delete_options_in_the_body(client: Client, api: FakeApi) -> None:
    created = await client.create(CM, cm("a"))
    status = await client.delete(
        CM, "a", propagation_policy="Foreground", grace_period_seconds=0,
        preconditions={"resourceVersion": created["metadata"]["resourceVersion"]},
    )
    assert orjson.loads(api.requests[-1].body) == {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0, "preconditions": {"resourceVersion": created["metadata"]["resourceVersion"]},
    }
    assert status["kind"] == "Status" and status["status"] == "Success"
    with pytest.raises(NotFound):
        await client.get(CM, "a")


async def test_delete_with_a_stale_precondition_is_a_conflict(client: Client) -> None:
    await client.create(CM, cm("a"))
    with pytest.raises(Conflict):
        await client.delete(CM, "a", preconditions={"resourceVersion": "1"})


async def test_status_subresource_update_changes_only_status(client: Client, api: FakeApi) -> None:
    w = await client.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                      "metadata": {"name": "w"}, "spec": {"size": 1}})
    w["spec"] = {"size": 9}
    w["status"] = {"ready": True}
    out = await client.update(WIDGETS, w, subresource="status")
    assert api.requests[-1].path == "/apis/example.com/v1/namespaces/default/widgets/w/status"
    assert out["status"] == {"ready": True}
    assert out["spec"] == {"size": 1}


async def test_scale_subresource_reads_and_sets_replicas(client: Client, api: FakeApi) -> None:
    await client.create(DEPLOY, {"metadata": {"name": "d"}, "spec": {"replicas": 1}})
    scale = await client.get(DEPLOY, "d", subresource="scale")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    await client.scale(DEPLOY, "d", 4)
    assert api.requests[-1].path == "/apis/apps/v1/namespaces/default/deployments/d/scale"
    assert (await client.get(DEPLOY, "d"))["spec"]["replicas"] == 4


async def test_list_all_follows_continue_tokens_and_returns_the_list_resource_version(
    client: Client, api: FakeApi
) -> None:
    for i in range(5):
        await client.create(CM, cm(f"c{i}"))
    items, rv = await client.list_all(CM, page_size=2)
    assert [i["metadata"]["name"] for i in items] == [f"c{i}" for i in range(5)]
    assert rv == str(api.rv)
    lists = [r for r in api.requests if r.method == "GET"]
    assert [r.query.get("continue", "") != "" for r in lists] == [False, True, True]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)


async def test_list_all_falls_back_to_one_full_list_when_the_continue_token_expires(
    client: Client, api: FakeApi
) -> None:
    for i in range(3):
        await client.create(CM, cm(f"c{i}"))
    api.compacted_rv = api.rv + 1  # every continue token is now too old
    items, _ = await client.list_all(CM, page_size=2)
    assert len(items) == 3
    assert "limit" not in api.requests[-1].query


async def test_namespace_all_lists_across_namespaces(client: Client, api: FakeApi) -> None:
    await client.create(CM, cm("a", "one"))
    await client.create(CM, cm("b", "two"))
    items, _ = await client.list_all(CM, namespace=NAMESPACE_ALL)
    assert {i["metadata"]["namespace"] for i in items} == {"one", "two"}
    assert api.requests[-1].path == "/api/v1/configmaps"
    assert (await client.list(CM, label_selector="a=b"))["items"] == []


async def test_custom_resources_use_their_group_path(client: Client, api: FakeApi) -> None:
    await client.create(WIDGETS, {"metadata": {"name": "w"}, "spec": {}}, namespace="ns")
    assert api.requests[-1].path == "/apis/example.com/v1/namespaces/ns/widgets"
    assert (await client.get(WIDGETS, "w", namespace="ns"))["kind"] == "Widget"
