"""The cascade preview reads dependents stored with duplicate ownerReferences (old data) as the GC does.

The API server drops duplicates on every write now (apiserver ``handlers/rest.go``
``dedupOwnerReferencesAndAddWarning``), but objects stored by a server before 1.20 may hold them: an
owner listed twice is still one owner, each dependent is predicted once, and the prediction is what the
garbage collector then removes.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.guard import preview_delete
from kubeloop.testing import rewrite_stored

from .conftest import CONFIGMAPS, DEPLOYMENTS, REPLICASETS, Cluster, owner_ref
from .test_preview import delete_and_settle, names


async def store_refs(cluster: Cluster, info: ResourceInfo, name: str, refs: list[dict[str, Any]]) -> None:
    """Rewrite ``name`` in the store with ``refs`` as they are, as a server before 1.20 stored them."""
    await rewrite_stored(cluster.store, f"/registry/{info.group or 'core'}/{info.plural}/prod/{name}",
                         lambda obj: obj["metadata"].__setitem__("ownerReferences", refs))


async def test_a_dependent_listing_its_owner_twice_is_predicted_once(cluster: Cluster) -> None:
    owner = await cluster.deployment_chain()
    await store_refs(cluster, REPLICASETS, "web-1", [owner_ref(owner), owner_ref(owner)])
    impact = await preview_delete(cluster.client, "deploy", "web")
    assert names(impact.deleted) == {"deployment.apps/web", "replicaset.apps/web-1", "pod/web-1-0", "pod/web-1-1",
                                     "pod/web-1-2"}
    assert len(impact.deleted) == 5
    removed = await delete_and_settle(cluster, DEPLOYMENTS, "web", "background", impact)
    assert removed == impact.deleted_uids


async def test_a_duplicated_dead_owner_does_not_hide_a_live_one(cluster: Cluster) -> None:
    a = await cluster.make(CONFIGMAPS, "owner-a")
    b = await cluster.make(CONFIGMAPS, "owner-b")
    await cluster.make(CONFIGMAPS, "shared")
    plain_a, plain_b = owner_ref(a, controller=False), owner_ref(b, controller=False)
    await store_refs(cluster, CONFIGMAPS, "shared", [plain_a, plain_b, dict(plain_a)])
    impact = await preview_delete(cluster.client, "cm", "owner-a")
    assert names(impact.deleted) == {"configmap/owner-a"}
    assert [(s.ref.name, s.kept_by) for s in impact.surviving] == [("shared", ("configmap/owner-b",))]
    removed = await delete_and_settle(cluster, CONFIGMAPS, "owner-a", "background", impact)
    assert removed == impact.deleted_uids
    shared = await cluster.get_or_none(CONFIGMAPS, "shared")
    assert shared is not None
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["owner-b"]
