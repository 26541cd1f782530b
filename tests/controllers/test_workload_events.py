"""The workload controllers record upstream's Events (what ``kubectl describe`` shows), off the reconcile path."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.controllers._events import EventSink
from kubeloop.testing import RandomFaults

from ._workload_world import DEPLOYMENTS, NS, REPLICASETS, World, open_world, template

EVENTS = ResourceInfo("", "v1", "Event", "events", "event", True)


async def events(world: World, kind: str, name: str) -> list[tuple[str, str, str, str]]:
    items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
    return [(e["type"], e["reason"], e["message"], e["source"]["component"]) for e in items
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name]  # fmt: skip


def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}}


async def test_deployment_and_replicaset_record_scaling_creates_and_deletes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "deployment", "replicaset") as world:
        world.start_kubelet()
        await world.client.create(DEPLOYMENTS, deployment(3))

        async def rs_name() -> str:
            items = await world.items(REPLICASETS)
            return str(items[0]["metadata"]["name"]) if items else ""

        name = await world.eventually(rs_name)
        scaled_up = ("Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to 3", "deployment-controller")
        await world.eventually(lambda: _contains(world, "Deployment", "web", scaled_up))

        async def created() -> list[tuple[str, str, str, str]]:
            found = [e for e in await events(world, "ReplicaSet", name) if e[1] == "SuccessfulCreate"]
            return found if len(found) == 3 else []

        recorded = {e[2] for e in await world.eventually(created)}
        pods = {p["metadata"]["name"] for p in await world.pods(app="web")}
        assert recorded == {f"Created pod: {p}" for p in pods}
        assert all(e[3] == "replicaset-controller" for e in await events(world, "ReplicaSet", name))

        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 1}}, namespace=NS)
        scaled_down = ("Normal", "ScalingReplicaSet", f"Scaled down replica set {name} from 3 to 1",
                       "deployment-controller")
        await world.eventually(lambda: _contains(world, "Deployment", "web", scaled_down))

        async def deleted() -> int:
            return len([e for e in await events(world, "ReplicaSet", name) if e[1] == "SuccessfulDelete"])

        assert await world.eventually(lambda: _equals(deleted, 2))
        # Steady state: no more Events (an Event is a write, and a quiet controller writes nothing).
        assert await world.quiet_writes() == 0


async def test_failed_creates_are_warnings_and_never_fail_the_controller(tmp_path: Path) -> None:
    quota = RandomFaults(1.0, rng=random.Random(2), codes=(403,), resources=["pods"], verbs=["create"])
    async with open_world(tmp_path, "replicaset", faults=quota) as world:
        await world.client.create(REPLICASETS, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}})

        async def warned() -> bool:
            return any(e[0] == "Warning" and e[1] == "FailedCreate" and e[2].startswith("Error creating: ")
                       for e in await events(world, "ReplicaSet", "web"))  # fmt: skip

        assert await world.eventually(warned)


async def test_a_full_sink_drops_events_instead_of_growing(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        sink = EventSink(world.client, component="test", max_queued=2)
        obj = {"metadata": {"name": "web", "namespace": NS}}
        for i in range(5):
            sink.emit(obj, "Normal", "Test", f"message {i}", api_version="v1", kind="ConfigMap")
        assert (sink.pending, sink.dropped) == (2, 3)


async def _contains(world: World, kind: str, name: str, event: tuple[str, str, str, str]) -> bool:
    return event in await events(world, kind, name)


async def _equals(probe: Any, value: int) -> bool:
    return bool(await probe() == value)
