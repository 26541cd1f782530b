"""The garbage collector copes with dependents stored with duplicate ownerReferences (old data).

The API server now drops duplicates on every write (apiserver ``handlers/rest.go``
``dedupOwnerReferencesAndAddWarning``), but objects written by a server before 1.20 may still hold them
(upstream's ``referencesDiffs`` and ``attemptToDeleteItem`` work on the list as stored). Each case stores
the duplicates directly, then runs one propagation mode; the GC must finish (no hot loop, no stuck
owner) with the outcome it has for single references.
"""

from __future__ import annotations

from typing import Any

from kubeloop.testing import InProcessCluster, eventually, owner_ref, rewrite_stored

from .conftest import CONFIGMAPS, SECRETS, settle, start_gc


async def store_refs(cluster: InProcessCluster, name: str, refs: list[dict[str, Any]]) -> None:
    """Rewrite Secret ``name`` in the store with ``refs`` as they are, as a server before 1.20 stored them."""
    await rewrite_stored(cluster.store, f"/registry/core/secrets/ns/{name}",
                         lambda obj: obj["metadata"].__setitem__("ownerReferences", refs))


async def test_background_deletes_a_dependent_whose_only_owner_is_listed_twice(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "dep")
    await store_refs(cluster, "dep", [owner_ref(owner), owner_ref(owner)])
    await settle(gc, cluster)
    assert await cluster.exists(SECRETS, "dep")

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns")

    await eventually(lambda: cluster.gone(SECRETS, "dep"), clock=cluster.clock)


async def test_background_strips_every_copy_of_a_dead_owner_and_keeps_the_live_one(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    other = await cluster.create(CONFIGMAPS, "other")
    await cluster.create(SECRETS, "dep")
    await store_refs(cluster, "dep", [owner_ref(owner), owner_ref(other), owner_ref(owner)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns")

    async def only_other_left() -> bool:
        dep = await cluster.client.get(SECRETS, "dep", namespace="ns")
        return [r["name"] for r in dep["metadata"].get("ownerReferences") or []] == ["other"]

    await eventually(only_other_left, clock=cluster.clock)
    await settle(gc, cluster)
    assert await cluster.exists(SECRETS, "dep")


async def test_foreground_unblocks_and_deletes_a_dependent_listing_its_owner_twice(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "dep")
    blocking = owner_ref(owner, controller=True, block=True)
    await store_refs(cluster, "dep", [blocking, dict(blocking)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Foreground")

    await eventually(lambda: cluster.gone(CONFIGMAPS, "owner"), clock=cluster.clock)
    assert await cluster.gone(SECRETS, "dep")
    await settle(gc, cluster)


async def test_orphan_strips_every_copy_of_the_owner(cluster: InProcessCluster) -> None:
    gc = await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "dep")
    await store_refs(cluster, "dep", [owner_ref(owner), owner_ref(owner, block=True), owner_ref(owner)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Orphan")

    await eventually(lambda: cluster.gone(CONFIGMAPS, "owner"), clock=cluster.clock)
    await settle(gc, cluster)
    dep = await cluster.client.get(SECRETS, "dep", namespace="ns")
    assert "ownerReferences" not in dep["metadata"]
