"""Deployment controller under conflicts and API faults: steady state, 409 races, 20% failures."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.testing import RandomFaults, Write

from ._workload_world import DEPLOYMENTS, NS, REPLICASETS, World, open_world, template

CONTROLLERS = ("deployment", "replicaset")


def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template()}}


async def rolled_out(world: World, replicas: int, image: str = "nginx:1.25") -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        d = await world.get(DEPLOYMENTS, "web")
        s = d.get("status") or {}
        assert s.get("observedGeneration") == d["metadata"]["generation"]
        assert (s.get("replicas"), s.get("updatedReplicas"), s.get("availableReplicas")) == (replicas,) * 3, s
        pods = await world.pods(app="web")
        assert len(pods) == replicas and {p["spec"]["containers"][0]["image"] for p in pods} == {image}
        return d

    result: dict[str, Any] = await world.eventually(check, step=0.2, tries=1500)
    return result


async def test_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, *CONTROLLERS) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(3))
        await rolled_out(world, 3)
        assert await world.quiet_writes() == 0


async def test_a_concurrent_writer_forcing_409_loses_no_update_and_creates_no_duplicate(tmp_path: Path) -> None:
    raced: list[Write] = []

    async def race(write: Write) -> None:
        # Race the controller's first ReplicaSet scale and its first Deployment status write.
        kinds = [w.resource for w in raced]
        if write.verb == "update" and write.resource in ("replicasets", "deployments") and write.resource not in kinds:
            raced.append(write)
            resource = REPLICASETS if write.resource == "replicasets" else DEPLOYMENTS
            await world.client.patch(resource, write.name, {"metadata": {"labels": {"touched": "y"}}}, namespace=NS)

    async with open_world(tmp_path, *CONTROLLERS, before_write=race) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(3))
        await rolled_out(world, 3)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template(image="nginx:1.26")}}, namespace=NS)
        d = await rolled_out(world, 3, "nginx:1.26")
        assert {w.resource for w in raced} == {"replicasets", "deployments"}
        assert sum(w.outcome == "error:409" for w in world.ctl.writes) >= 2
        assert d["metadata"]["labels"]["touched"] == "y"
        rss = await world.items(REPLICASETS)
        assert len(rss) == 2 and world.ctl.count(verb="create", resource="replicasets") == 2
        assert any(rs["metadata"].get("labels", {}).get("touched") == "y" for rs in rss)


async def test_converges_when_a_fifth_of_writes_fail_with_409_or_500(tmp_path: Path) -> None:
    faults = RandomFaults(0.2, rng=random.Random(7))
    async with open_world(tmp_path, *CONTROLLERS, faults=faults) as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(4))
        await rolled_out(world, 4)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": template(image="nginx:1.26")}}, namespace=NS)
        await rolled_out(world, 4, "nginx:1.26")
        await world.client.scale(DEPLOYMENTS, "web", 6, namespace=NS)
        d = await rolled_out(world, 6, "nginx:1.26")
        assert any(w.injected for w in world.ctl.writes)
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert len(await world.items(REPLICASETS)) == 2
        faults.enabled = False
        assert await world.quiet_writes() == 0
