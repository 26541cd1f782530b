"""StatefulSet controller under conflicts and API faults: no lost update, no duplicate, convergence."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.testing import RandomFaults, Write

from ._workload_world import NS, PVCS, STATEFULSETS, World, names, open_world, template


def statefulset(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
            "spec": {"replicas": replicas, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": template("db"), "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


async def converged(world: World, replicas: int) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        sts = await world.get(STATEFULSETS, "db")
        s = sts.get("status") or {}
        assert s.get("observedGeneration") == sts["metadata"]["generation"]
        assert (s.get("replicas"), s.get("readyReplicas"), s.get("updatedReplicas")) == (replicas,) * 3, s
        assert names(await world.pods(app="db")) == [f"db-{i}" for i in range(replicas)]
        return sts

    result: dict[str, Any] = await world.eventually(check, step=0.2, tries=1500)
    return result


async def test_a_concurrent_writer_forcing_409_loses_no_update(tmp_path: Path) -> None:
    raced: list[Write] = []

    async def race(write: Write) -> None:
        if write.resource == "statefulsets" and write.subresource == "status" and not raced:
            raced.append(write)
            await world.client.patch(STATEFULSETS, "db", {"metadata": {"labels": {"touched": "y"}}}, namespace=NS)

    async with open_world(tmp_path, "statefulset", before_write=race) as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(3))
        sts = await converged(world, 3)
        assert raced and any(w.outcome == "error:409" for w in world.ctl.writes)
        assert sts["metadata"]["labels"]["touched"] == "y"
        assert world.ctl.count(verb="create", resource="pods") == 3
        assert len(await world.items(PVCS)) == 3


async def test_converges_when_a_fifth_of_writes_fail_with_409_or_500(tmp_path: Path) -> None:
    faults = RandomFaults(0.2, rng=random.Random(11))
    async with open_world(tmp_path, "statefulset", faults=faults) as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(3))
        await converged(world, 3)
        await world.client.scale(STATEFULSETS, "db", 5, namespace=NS)
        await converged(world, 5)
        await world.client.patch(STATEFULSETS, "db", {"spec": {"template": template("db", image="nginx:1.26")}},
                                 namespace=NS)  # fmt: skip
        sts = await converged(world, 5)
        assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
        assert {p["spec"]["containers"][0]["image"] for p in await world.pods(app="db")} == {"nginx:1.26"}
        assert any(w.injected for w in world.ctl.writes)
        assert sorted(c["metadata"]["name"] for c in await world.items(PVCS)) == [f"data-db-{i}" for i in range(5)]
        faults.enabled = False
        assert await world.quiet_writes() == 0
