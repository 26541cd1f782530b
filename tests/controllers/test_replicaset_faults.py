"""ReplicaSet controller under conflicts and API faults: no lost update, no duplicate pod, convergence."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.testing import RandomFaults, Write

from ._workload_world import NS, REPLICASETS, World, open_world, template


def replicaset(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template()}}


async def converged(world: World, replicas: int) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        rs = await world.get(REPLICASETS, "web")
        status = rs.get("status") or {}
        assert status.get("observedGeneration") == rs["metadata"]["generation"]
        assert status.get("replicas") == replicas and status.get("readyReplicas", 0) == replicas, status
        assert len(await world.pods(app="web")) == replicas
        return rs

    result: dict[str, Any] = await world.eventually(check, step=0.2, tries=1500)
    return result


async def test_a_concurrent_writer_forcing_409_loses_no_update_and_creates_no_duplicate(tmp_path: Path) -> None:
    raced: list[Write] = []

    async def race(write: Write) -> None:
        # Just before each of the controller's first two status writes, someone else writes the RS.
        if write.resource == "replicasets" and write.subresource == "status" and len(raced) < 2:
            raced.append(write)
            await world.client.patch(REPLICASETS, "web", {"metadata": {"annotations": {f"touched-{len(raced)}": "y"}}},
                                     namespace=NS)  # fmt: skip

    async with open_world(tmp_path, "replicaset", before_write=race) as world:
        world.start_kubelet()
        await world.client.create(REPLICASETS, replicaset(4))
        rs = await converged(world, 4)
        assert len(raced) == 2
        assert any(w.outcome == "error:409" for w in world.ctl.writes)
        assert rs["metadata"]["annotations"] == {"touched-1": "y", "touched-2": "y"}  # the other writer's update
        assert world.ctl.count(verb="create", resource="pods") == 4


async def test_converges_when_a_fifth_of_writes_fail_with_409_or_500(tmp_path: Path) -> None:
    faults = RandomFaults(0.2, rng=random.Random(42))
    async with open_world(tmp_path, "replicaset", faults=faults) as world:
        world.start_kubelet()
        await world.client.create(REPLICASETS, replicaset(5))
        await converged(world, 5)
        await world.client.scale(REPLICASETS, "web", 10, namespace=NS)
        await converged(world, 10)
        await world.client.scale(REPLICASETS, "web", 3, namespace=NS)
        await converged(world, 3)
        assert any(w.injected for w in world.ctl.writes)
        creates = world.ctl.count(verb="create", resource="pods")
        deletes = world.ctl.count(verb="delete", resource="pods")
        assert creates == 10 and deletes == 7  # not one pod more than needed
        faults.enabled = False
        assert await world.quiet_writes() == 0
