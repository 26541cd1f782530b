"""``Client.delete_collection`` against the real kubeloop API server (in-process)."""

from __future__ import annotations

import orjson
from _realapi import Cluster, FaultyApp

from kubeloop.api import KindRegistry
from kubeloop.client import Client

REG = KindRegistry()
CM = REG.by_kind("", "ConfigMap")
assert CM


async def test_delete_collection_removes_the_selected_objects_and_returns_them(client: Client) -> None:
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        await client.create(CM, {"metadata": {"name": name, "labels": {"tier": tier}}}, namespace="one")
    await client.create(CM, {"metadata": {"name": "a", "labels": {"tier": "web"}}}, namespace="two")

    deleted = await client.delete_collection(CM, namespace="one", label_selector="tier=web")

    assert deleted["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in deleted["items"]) == ["a", "b"]
    # The server's typed list leaves them out (kubernetes#3030); the client sets them, as on a list.
    assert all((i["kind"], i["apiVersion"]) == ("ConfigMap", "v1") for i in deleted["items"])
    left, _ = await client.list_all(CM, namespace="one")
    assert [i["metadata"]["name"] for i in left] == ["c"]
    other, _ = await client.list_all(CM, namespace="two")
    assert [i["metadata"]["name"] for i in other] == ["a"]


async def test_delete_collection_sends_delete_options_and_selectors(client: Client, app: FaultyApp) -> None:
    await client.create(CM, {"metadata": {"name": "a"}}, namespace="one")

    await client.delete_collection(CM, namespace="one", field_selector="metadata.name=a",
                                   propagation_policy="Foreground", grace_period_seconds=0)

    sent = app.requests[-1]
    assert sent.method == "DELETE" and sent.path.endswith("/namespaces/one/configmaps")
    assert sent.query == {"fieldSelector": "metadata.name=a"}
    assert orjson.loads(sent.body) == {"kind": "DeleteOptions", "apiVersion": "v1",
                                       "propagationPolicy": "Foreground", "gracePeriodSeconds": 0}
    # Foreground: the object stays, terminating, until its dependents are gone (no GC runs here).
    kept = await client.get(CM, "a", namespace="one")
    assert kept["metadata"]["finalizers"] == ["foregroundDeletion"]


async def test_delete_collection_dry_run_changes_nothing(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}}, namespace="one")

    answer = await client.delete_collection(CM, namespace="one", dry_run=True)

    assert [i["metadata"]["name"] for i in answer["items"]] == ["a"]
    assert (await client.get(CM, "a", namespace="one"))["metadata"]["name"] == "a"


async def test_delete_collection_items_share_durable_commits(client: Client, cluster: Cluster) -> None:
    # The server deletes the items concurrently, so the store's group commit batches them: far fewer
    # transactions than objects (one fsync each would make a namespace delete crawl).
    for i in range(60):
        await client.create(CM, {"metadata": {"name": f"cm-{i}"}}, namespace="one")
    before = cluster.store.batches_committed

    deleted = await client.delete_collection(CM, namespace="one")

    assert len(deleted["items"]) == 60
    assert cluster.store.batches_committed - before <= 10
    assert (await client.list_all(CM, namespace="one"))[0] == []
