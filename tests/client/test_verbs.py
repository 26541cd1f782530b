"""Every client verb against the real kubeloop API server (in-process), as a user would call it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _realapi import Cluster, FaultyApp, install_widgets

from kubeloop.api import AlreadyExists, Conflict, Expired, Invalid, KindRegistry, NotFound
from kubeloop.client import NAMESPACE_ALL, Client

REG = KindRegistry()
CM = REG.by_kind("", "ConfigMap")
DEPLOY = REG.by_kind("apps", "Deployment")
NS = REG.by_kind("", "Namespace")
assert CM and DEPLOY and NS


def cm(name: str, ns: str | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }


async def test_create_then_get_returns_the_stored_object(client: Client) -> None:
    created = await client.create(CM, cm("a", x="1"))
    got = await client.get(CM, "a")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["namespace"] == "default"
    assert got["data"] == {"x": "1"}


async def test_create_uses_the_objects_own_namespace_before_the_default(client: Client, app: FaultyApp) -> None:
    await client.create(CM, cm("a", "team"))
    assert app.requests[-1].path == "/api/v1/namespaces/team/configmaps"
    assert (await client.get(CM, "a", namespace="team"))["metadata"]["namespace"] == "team"


async def test_cluster_scoped_kinds_ignore_the_namespace(client: Client, app: FaultyApp) -> None:
    await client.create(NS, {"metadata": {"name": "n1"}}, namespace="ignored")
    assert app.requests[-1].path == "/api/v1/namespaces"
    assert (await client.get(NS, "n1"))["metadata"]["name"] == "n1"


async def test_creating_an_existing_object_is_already_exists(client: Client) -> None:
    await client.create(CM, cm("a"))
    with pytest.raises(AlreadyExists, match='configmaps "a" already exists'):
        await client.create(CM, cm("a"))


async def test_get_of_a_missing_object_is_not_found_with_the_server_message(client: Client) -> None:
    with pytest.raises(NotFound) as info:
        await client.get(CM, "nope")
    assert info.value.message == 'configmaps "nope" not found'
    assert info.value.details["name"] == "nope"


async def test_an_invalid_object_is_invalid_with_its_field_causes(client: Client) -> None:
    with pytest.raises(Invalid) as info:
        await client.create(CM, cm("Not_A_Name"))
    assert any(c.get("field") == "metadata.name" for c in info.value.details.get("causes", []))


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
    client: Client, app: FaultyApp, patch_type: str, body: object, content_type: str
) -> None:
    await client.create(CM, cm("a", x="1"))
    out = await client.patch(CM, "a", body, patch_type=patch_type)  # type: ignore[arg-type]
    assert app.requests[-1].headers["content-type"] == content_type
    assert out["data"] == {"x": "1", "y": "2"}


async def test_apply_creates_then_updates_the_fields_its_manager_owns(client: Client, app: FaultyApp) -> None:
    out = await client.apply(CM, cm("a", x="1"), field_manager="me", force=True)
    req = app.requests[-1]
    assert req.method == "PATCH"
    assert req.path == "/api/v1/namespaces/default/configmaps/a"
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    assert req.query == {"fieldManager": "me", "force": "true"}
    assert out["data"] == {"x": "1"}
    assert [m["manager"] for m in out["metadata"]["managedFields"]] == ["me"]
    out = await client.apply(CM, cm("a", x="2"), field_manager="me")
    assert out["data"] == {"x": "2"}


async def test_a_conflicting_apply_by_another_manager_is_a_conflict_unless_forced(client: Client) -> None:
    await client.apply(CM, cm("a", x="1"), field_manager="one")
    with pytest.raises(Conflict):
        await client.apply(CM, cm("a", x="2"), field_manager="two")
    assert (await client.apply(CM, cm("a", x="2"), field_manager="two", force=True))["data"] == {"x": "2"}


async def test_dry_run_is_sent_as_dry_run_all_and_persists_nothing(client: Client, app: FaultyApp) -> None:
    out = await client.create(CM, cm("a"), dry_run=True, field_manager="m")
    assert app.requests[-1].query == {"dryRun": "All", "fieldManager": "m"}
    assert out["metadata"]["name"] == "a"
    with pytest.raises(NotFound):
        await client.get(CM, "a")


async def test_delete_sends_delete_options_in_the_body(client: Client, app: FaultyApp) -> None:
    created = await client.create(CM, cm("a"))
    status = await client.delete(
        CM, "a", propagation_policy="Foreground", grace_period_seconds=0,
        preconditions={"resourceVersion": created["metadata"]["resourceVersion"]},
    )  # fmt: skip
    assert orjson.loads(app.requests[-1].body) == {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0, "preconditions": {"resourceVersion": created["metadata"]["resourceVersion"]},
    }  # fmt: skip
    # Foreground: the object stays, terminating, until its dependents are gone (no GC runs here).
    assert status["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert "deletionTimestamp" in (await client.get(CM, "a"))["metadata"]


async def test_delete_of_an_object_without_finalizers_removes_it(client: Client) -> None:
    await client.create(CM, cm("a"))
    await client.delete(CM, "a")
    with pytest.raises(NotFound):
        await client.get(CM, "a")


async def test_delete_with_a_stale_precondition_is_a_conflict(client: Client) -> None:
    await client.create(CM, cm("a"))
    await client.patch(CM, "a", {"data": {"x": "1"}})
    with pytest.raises(Conflict):
        await client.delete(CM, "a", preconditions={"resourceVersion": "1"})


async def test_status_subresource_update_changes_only_status(client: Client, app: FaultyApp) -> None:
    widgets = await install_widgets(client)
    w = await client.create(
        widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    )
    w["spec"] = {"size": 9}
    w["status"] = {"ready": True}
    out = await client.update(widgets, w, subresource="status")
    assert app.requests[-1].path == "/apis/example.com/v1/namespaces/default/widgets/w/status"
    assert out["status"] == {"ready": True}
    assert out["spec"] == {"size": 1}
    patched = await client.patch(widgets, "w", {"status": {"ready": False}}, subresource="status")
    assert patched["status"] == {"ready": False} and patched["metadata"]["generation"] == 1


async def test_scale_subresource_reads_and_sets_replicas(client: Client, app: FaultyApp) -> None:
    await client.create(DEPLOY, deployment("d"))
    scale = await client.get(DEPLOY, "d", subresource="scale")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    await client.scale(DEPLOY, "d", 4)
    assert app.requests[-1].path == "/apis/apps/v1/namespaces/default/deployments/d/scale"
    assert (await client.get(DEPLOY, "d"))["spec"]["replicas"] == 4


async def test_custom_resources_work_like_built_ins_including_scale(client: Client, app: FaultyApp) -> None:
    widgets = await install_widgets(client)
    await client.create(widgets, {"metadata": {"name": "w"}, "spec": {"replicas": 1}}, namespace="ns")
    assert app.requests[-1].path == "/apis/example.com/v1/namespaces/ns/widgets"
    assert (await client.get(widgets, "w", namespace="ns"))["kind"] == "Widget"
    await client.scale(widgets, "w", 3, namespace="ns")
    assert (await client.get(widgets, "w", namespace="ns"))["spec"]["replicas"] == 3
    items, _ = await client.list_all(widgets, namespace=NAMESPACE_ALL)
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [("Widget", "w")]


async def test_list_all_follows_continue_tokens_and_returns_the_list_resource_version(
    client: Client, app: FaultyApp
) -> None:
    for i in range(5):
        await client.create(CM, cm(f"c{i}"))
    current = (await client.list(CM))["metadata"]["resourceVersion"]
    items, rv = await client.list_all(CM, page_size=2)
    assert [i["metadata"]["name"] for i in items] == [f"c{i}" for i in range(5)]
    assert rv == current
    lists = [r for r in app.requests if r.method == "GET"][-3:]
    assert [r.query.get("continue", "") != "" for r in lists] == [False, True, True]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)


async def test_list_items_get_the_list_kind_the_server_leaves_out(client: Client) -> None:
    # kube-apiserver omits kind/apiVersion on built-in list items (kubernetes#3030); the client sets
    # them from the list's, as client-go's unstructured decoding (decodeToList) does.
    await client.create(DEPLOY, deployment("d"))
    # (the server's answer has neither on the item: tests/server/test_list_item_types.py)
    page = await client.list(DEPLOY, limit=1)
    [item] = page["items"]
    assert (item["kind"], item["apiVersion"], item["metadata"]["name"]) == ("Deployment", "apps/v1", "d")
    await client.update(DEPLOY, item)  # an object from a list goes back as it came


async def test_pages_are_one_snapshot_even_when_objects_change_between_pages(client: Client) -> None:
    for i in range(4):
        await client.create(CM, cm(f"c{i}"))
    first = await client.list(CM, limit=2)
    await client.create(CM, cm("c9"))  # after the snapshot: not in the second page
    rest = await client.list(CM, limit=2, continue_token=first["metadata"]["continue"])
    names = [i["metadata"]["name"] for i in first["items"] + rest["items"]]
    assert names == ["c0", "c1", "c2", "c3"] and not rest["metadata"].get("continue")


async def test_an_expired_continue_token_is_expired(cluster: Cluster, client: Client) -> None:
    for i in range(3):
        await client.create(CM, cm(f"c{i}"))
    first = await client.list(CM, limit=2)
    await client.create(CM, cm("later"))
    await cluster.store.compact(cluster.store.revision)
    with pytest.raises(Expired):
        await client.list(CM, limit=2, continue_token=first["metadata"]["continue"])


async def test_list_all_falls_back_to_one_full_list_when_the_continue_token_expires(
    client: Client, app: FaultyApp
) -> None:
    for i in range(3):
        await client.create(CM, cm(f"c{i}"))
    app.fail("GET", 410, reason="Expired", query_has="continue")
    items, _ = await client.list_all(CM, page_size=2)
    assert len(items) == 3
    assert "limit" not in app.requests[-1].query


async def test_namespace_all_lists_across_namespaces_and_selectors_filter(client: Client, app: FaultyApp) -> None:
    await client.create(CM, cm("a", "one") | {"metadata": {"name": "a", "namespace": "one", "labels": {"k": "v"}}})
    await client.create(CM, cm("b", "two"))
    items, _ = await client.list_all(CM, namespace=NAMESPACE_ALL)
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items} >= {("one", "a"), ("two", "b")}
    assert app.requests[-1].path == "/api/v1/configmaps"
    selected = await client.list(CM, namespace=NAMESPACE_ALL, label_selector="k=v")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["a"]
    by_field = await client.list(CM, namespace=NAMESPACE_ALL, field_selector="metadata.name=b")
    assert [i["metadata"]["namespace"] for i in by_field["items"]] == ["two"]
