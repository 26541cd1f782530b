"""Foreground and Orphan propagation, blockOwnerDeletion, custom resources, and the check-then-delete race
(controllers reference 1.4 and 1.6; k/k garbagecollector.go, PR #132632)."""

from __future__ import annotations

from typing import Any

from kubeloop.client import Client
from kubeloop.testing import InProcessCluster, eventually, owner_ref

from .conftest import CONFIGMAPS, CRDS, SECRETS, settle, start_gc

HOLD = "example.com/hold"


async def release(cluster: InProcessCluster, resource: Any, name: str) -> None:
    await cluster.client.patch(resource, name, {"metadata": {"finalizers": None}}, namespace="ns")


async def test_foreground_keeps_the_owner_until_blocking_dependents_are_gone(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "blocking", owners=[owner_ref(owner, block=True)], finalizers=[HOLD])
    await cluster.create(SECRETS, "plain", owners=[owner_ref(owner)], finalizers=[HOLD])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Foreground")

    async def both_dependents_being_deleted() -> bool:
        objs = [await cluster.client.get(SECRETS, n, namespace="ns") for n in ("blocking", "plain")]
        return all(o["metadata"].get("deletionTimestamp") for o in objs)

    await eventually(both_dependents_being_deleted, clock=cluster.clock)
    await settle(gc, cluster)
    waiting = await cluster.client.get(CONFIGMAPS, "owner", namespace="ns")
    assert waiting["metadata"]["deletionTimestamp"]
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

    # A non-blocking dependent does not hold the owner: only the blocking one does.
    await release(cluster, SECRETS, "plain")
    await eventually(lambda: cluster.gone(SECRETS, "plain"), clock=cluster.clock)
    await settle(gc, cluster)
    assert await cluster.exists(CONFIGMAPS, "owner")

    await release(cluster, SECRETS, "blocking")
    await eventually(lambda: cluster.gone(CONFIGMAPS, "owner"), clock=cluster.clock)


async def test_foreground_waits_transitively_through_dependents_that_have_dependents(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "top")
    middle = await cluster.create(CONFIGMAPS, "middle", owners=[owner_ref(owner, controller=True, block=True)])
    await cluster.create(SECRETS, "leaf", owners=[owner_ref(middle, controller=True, block=True)], finalizers=[HOLD])

    await cluster.client.delete(CONFIGMAPS, "top", namespace="ns", propagation_policy="Foreground")

    async def middle_in_foreground() -> bool:
        obj = await cluster.client.get(CONFIGMAPS, "middle", namespace="ns")
        return "foregroundDeletion" in (obj["metadata"].get("finalizers") or [])

    await eventually(middle_in_foreground, clock=cluster.clock)
    await settle(gc, cluster)
    assert await cluster.exists(CONFIGMAPS, "top")
    assert await cluster.exists(CONFIGMAPS, "middle")

    await release(cluster, SECRETS, "leaf")
    await eventually(lambda: cluster.gone(CONFIGMAPS, "top"), clock=cluster.clock)
    assert await cluster.gone(CONFIGMAPS, "middle")
    assert await cluster.gone(SECRETS, "leaf")


async def test_orphan_strips_the_owner_reference_and_keeps_the_dependents(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    other = await cluster.create(CONFIGMAPS, "other")
    await cluster.create(SECRETS, "one", owners=[owner_ref(owner, controller=True, block=True)])
    await cluster.create(SECRETS, "two", owners=[owner_ref(owner), owner_ref(other)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Orphan")

    await eventually(lambda: cluster.gone(CONFIGMAPS, "owner"), clock=cluster.clock)
    await settle(gc, cluster)
    one = await cluster.client.get(SECRETS, "one", namespace="ns")
    two = await cluster.client.get(SECRETS, "two", namespace="ns")
    assert "ownerReferences" not in one["metadata"]
    assert [r["name"] for r in two["metadata"]["ownerReferences"]] == ["other"]


class ReparentingClient(Client):
    """Before the GC's first delete of ``target``, another writer re-parents it to a live owner."""

    writer: Client
    new_owner: dict[str, Any]
    deletes: list[dict[str, Any]]
    mode = "reparent"

    async def delete(self, resource: Any, name: str, **kwargs: Any) -> dict[str, Any]:
        if name == "target":
            if not self.deletes:
                obj = await self.writer.get(resource, name, namespace="ns")
                if self.mode == "reparent":
                    obj["metadata"]["ownerReferences"] = [owner_ref(self.new_owner)]
                else:
                    obj["metadata"].setdefault("labels", {})["touched"] = "yes"
                await self.writer.update(resource, obj)
            self.deletes.append(kwargs.get("preconditions") or {})
        return await super().delete(resource, name, **kwargs)


async def test_a_dependent_reparented_between_check_and_delete_is_not_deleted(cluster: InProcessCluster) -> None:
    old = await cluster.create(CONFIGMAPS, "old")
    new = await cluster.create(CONFIGMAPS, "new")
    await cluster.create(SECRETS, "target", owners=[owner_ref(old)])
    racing: ReparentingClient = cluster.new_client(ReparentingClient)
    racing.writer, racing.new_owner, racing.deletes = cluster.client, new, []
    gc = await start_gc(cluster, racing)

    await cluster.client.delete(CONFIGMAPS, "old", namespace="ns")

    async def delete_attempted() -> bool:
        return bool(racing.deletes)

    await eventually(delete_attempted, clock=cluster.clock)
    await settle(gc, cluster)
    survivor = await cluster.get_or_none(SECRETS, "target", "ns")
    assert survivor is not None, "the GC deleted an object whose ownerReferences changed after its check"
    assert [r["name"] for r in survivor["metadata"]["ownerReferences"]] == ["new"]
    # The one delete it sent was conditional on the classified version.
    assert racing.deletes[0]["uid"] == survivor["metadata"]["uid"]
    assert racing.deletes[0]["resourceVersion"]
    assert len(racing.deletes) == 1


async def test_unrelated_changes_between_check_and_delete_do_not_starve_collection(cluster: InProcessCluster) -> None:
    old = await cluster.create(CONFIGMAPS, "old")
    await cluster.create(SECRETS, "target", owners=[owner_ref(old)])
    racing: ReparentingClient = cluster.new_client(ReparentingClient)
    racing.writer, racing.new_owner, racing.deletes, racing.mode = cluster.client, old, [], "label"
    await start_gc(cluster, racing)

    await cluster.client.delete(CONFIGMAPS, "old", namespace="ns")

    await eventually(lambda: cluster.gone(SECRETS, "target"), clock=cluster.clock)
    # First with uid + resourceVersion (409), then with the uid only.
    assert "resourceVersion" in racing.deletes[0]
    assert racing.deletes[1] == {"uid": racing.deletes[0]["uid"]}


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


async def test_custom_resources_created_after_start_are_owners_too(cluster: InProcessCluster) -> None:
    from kubeloop.api import ResourceInfo

    await start_gc(cluster)
    await cluster.client.create(CRDS, CRD)
    widgets = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True, custom=True)

    async def served() -> dict[str, Any] | None:
        try:
            return await cluster.create(widgets, "w1")
        except Exception:
            return None

    widget = await eventually(served, clock=cluster.clock)
    await cluster.create(SECRETS, "child", owners=[owner_ref(widget)])
    w_child = await cluster.create(widgets, "w-child", owners=[owner_ref(widget)])
    assert w_child

    await cluster.client.delete(widgets, "w1", namespace="ns")

    await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)
    await eventually(lambda: cluster.gone(widgets, "w-child"), clock=cluster.clock)
