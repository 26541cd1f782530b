"""Background propagation, multiple owners, recreated owners and cross-namespace owners (controllers ref. 1.2-1.3, 1.7)."""

from __future__ import annotations

from kubeloop.controllers import GarbageCollector

from .conftest import CONFIGMAPS, DEPLOYMENTS, EVENTS, REPLICASETS, SECRETS, Cluster, eventually, owner_ref


async def start_gc(cluster: Cluster, **kw: object) -> GarbageCollector:
    gc = GarbageCollector(cluster.client, clock=cluster.clock, workers=2, **kw)  # type: ignore[arg-type]
    cluster.run_in_background(gc.run())
    await eventually(lambda: _true(gc.has_synced()), clock=cluster.clock)
    return gc


async def _true(value: bool) -> bool:
    return value


async def test_dependents_of_a_deleted_owner_are_deleted(cluster: Cluster) -> None:
    await start_gc(cluster)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
    grandchild_owner = await cluster.create(CONFIGMAPS, "middle", owners=[owner_ref(owner)])
    await cluster.create(CONFIGMAPS, "grandchild", owners=[owner_ref(grandchild_owner)])

    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns", propagation_policy="Background")

    await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)
    await eventually(lambda: cluster.gone(CONFIGMAPS, "middle"), clock=cluster.clock)
    await eventually(lambda: cluster.gone(CONFIGMAPS, "grandchild"), clock=cluster.clock)
