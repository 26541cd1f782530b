"""Background propagation, multiple owners, recreated owners and invalid owner scopes (controllers ref. 1.2, 1.3, 1.7)."""

from __future__ import annotations

from typing import Any

from kubeloop.testing import InProcessCluster, eventually, owner_ref, resource

from .conftest import CONFIGMAPS, EVENTS, SECRETS, settle, start_gc

CLUSTERROLES = resource("rbac.authorization.k8s.io", "ClusterRole")


async def test_dependents_of_a_deleted_owner_are_deleted_transitively(cluster: InProcessCluster) -> None:
    await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
    middle = await cluster.create(CONFIGMAPS, "middle", owners=[owner_ref(owner)])
    await cluster.create(CONFIGMAPS, "grandchild", owners=[owner_ref(middle)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Background")

    await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)
    await eventually(lambda: cluster.gone(CONFIGMAPS, "middle"), clock=cluster.clock)
    await eventually(lambda: cluster.gone(CONFIGMAPS, "grandchild"), clock=cluster.clock)


async def test_a_dependent_lives_while_any_owner_lives_and_loses_only_the_dead_reference(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    a = await cluster.create(CONFIGMAPS, "a")
    b = await cluster.create(CONFIGMAPS, "b")
    await cluster.create(SECRETS, "shared", owners=[owner_ref(a), owner_ref(b, controller=True)])

    await cluster.client.delete(CONFIGMAPS, "a", namespace="ns")

    async def reference_to_a_removed() -> bool:
        obj = await cluster.get_or_none(SECRETS, "shared", "ns")
        assert obj is not None, "a dependent with a live owner was deleted"
        return [r["name"] for r in obj["metadata"].get("ownerReferences", [])] == ["b"]

    await eventually(reference_to_a_removed, clock=cluster.clock)
    await settle(gc, cluster)
    assert await cluster.exists(SECRETS, "shared")

    await cluster.client.delete(CONFIGMAPS, "b", namespace="ns")
    await eventually(lambda: cluster.gone(SECRETS, "shared"), clock=cluster.clock)


async def test_an_owner_recreated_with_the_same_name_does_not_adopt_old_dependents(cluster: InProcessCluster) -> None:
    old = await cluster.create(CONFIGMAPS, "web")
    await cluster.create(SECRETS, "old-child", owners=[owner_ref(old)])
    await cluster.client.delete(CONFIGMAPS, "web", namespace="ns")
    new = await cluster.create(CONFIGMAPS, "web")
    await cluster.create(SECRETS, "new-child", owners=[owner_ref(new)])
    assert new["metadata"]["uid"] != old["metadata"]["uid"]

    gc = await start_gc(cluster)

    await eventually(lambda: cluster.gone(SECRETS, "old-child"), clock=cluster.clock)
    await settle(gc, cluster)
    assert await cluster.exists(CONFIGMAPS, "web")
    assert await cluster.exists(SECRETS, "new-child")


async def _events(cluster: InProcessCluster, namespace: str, reason: str) -> list[dict[str, Any]]:
    page = await cluster.client.list(EVENTS, namespace=namespace)
    return [e for e in page["items"] if e.get("reason") == reason]


async def test_an_owner_in_another_namespace_counts_as_absent_and_is_reported(cluster: InProcessCluster) -> None:
    await cluster.client.create(resource("", "Namespace"), {"metadata": {"name": "other"}})
    owner = await cluster.create(CONFIGMAPS, "owner", namespace="other")
    await cluster.create(SECRETS, "cross", owners=[owner_ref(owner)])
    gc = await start_gc(cluster)

    await eventually(lambda: cluster.gone(SECRETS, "cross"), clock=cluster.clock)

    async def warned() -> list[dict[str, Any]]:
        return await _events(cluster, "ns", "OwnerRefInvalidNamespace")

    events = await eventually(warned, clock=cluster.clock)
    uid = owner["metadata"]["uid"]
    assert events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["name"] == "cross"
    assert events[0]["message"] == (
        f'ownerRef [v1/ConfigMap, namespace: ns, name: owner, uid: {uid}] does not exist in namespace "ns"'
    )
    assert events[0]["source"] == {"component": "garbage-collector-controller"}
    await settle(gc, cluster)
    assert await cluster.exists(CONFIGMAPS, "owner", "other")
    assert len(await warned()) == 1  # one Event per cause, however often the GC meets it


async def test_a_cluster_scoped_dependent_of_a_namespaced_owner_kind_is_never_collected(cluster: InProcessCluster) -> None:
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(CLUSTERROLES, "confused", namespace=None, owners=[owner_ref(owner)])
    gc = await start_gc(cluster)
    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns")

    async def warned() -> list[dict[str, Any]]:
        return await _events(cluster, "default", "OwnerRefInvalidNamespace")

    events = await eventually(warned, clock=cluster.clock)
    assert events[0]["involvedObject"]["name"] == "confused"
    await settle(gc, cluster)
    await cluster.clock.advance(60)
    await settle(gc, cluster)
    assert await cluster.exists(CLUSTERROLES, "confused", None)
