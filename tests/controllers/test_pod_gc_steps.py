"""The pod garbage collector's other steps: terminated pods past the threshold, terminating pods on
out-of-service nodes, and unscheduled terminating pods; through the API, on the fake clock (the steps run
every 20 s: a test waiting for one moves fake time).

Upstream (release 1.32): k/k ``pkg/controller/podgc/gc_controller.go`` (``gcTerminated`` with
``byEvictionAndCreationTimestamp``, ``gcTerminating``, ``gcUnscheduledTerminating``,
``markFailedAndDeletePod``: phase Failed and no condition, then a delete with grace period 0) and
``pkg/controller/podgc/metrics`` (``pod_gc_collector_force_delete_pods_total{namespace,reason}``).
Nodes here have no kubelet: one without a Ready condition is not Ready, and its pods stay Pending.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeloop.controllers import PodGarbageCollector

from ._sim_world import NODES, NS, PODS
from ._world import ManagedWorld, managed_cluster

HOLD = "example.com/hold"
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


@dataclass(kw_only=True)
class GCWorld(ManagedWorld):
    gc: PodGarbageCollector

    def deleted_total(self, reason: str) -> float:
        value = self.manager.metrics.sample("pod_gc_collector_force_delete_pods_total",
                                            {"namespace": NS, "reason": reason})  # fmt: skip
        return value or 0.0

    def errors_total(self, reason: str) -> float:
        value = self.manager.metrics.sample("pod_gc_collector_force_delete_pod_errors_total",
                                            {"namespace": NS, "reason": reason})  # fmt: skip
        return value or 0.0

    async def names(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in (await self.client.list(PODS, namespace=NS)).get("items") or [])


@contextlib.asynccontextmanager
async def gc_world(tmp_path: Path, *, threshold: int = 12500) -> AsyncIterator[GCWorld]:
    async with managed_cluster(tmp_path) as (cluster, ctl, manager):
        gc = PodGarbageCollector(manager, terminated_pod_threshold=threshold)
        manager.add_controller(gc.controller)
        world = GCWorld(cluster=cluster, ctl=ctl, manager=manager, gc=gc)
        async with world.started():
            await world.synced()
            yield world


def node(name: str, *, ready: bool | None = None, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}
    if taints:
        obj["spec"]["taints"] = taints
    if ready is not None:
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return obj


def pod(name: str, node_name: str = "", *, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


async def finish(world: GCWorld, name: str, phase: str, reason: str = "") -> None:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    await world.client.patch(PODS, name, {"status": status}, namespace=NS, subresource="status", patch_type="merge")


async def release(world: GCWorld, name: str) -> None:
    await world.client.patch(PODS, name, {"metadata": {"finalizers": None}}, namespace=NS, patch_type="merge")


async def test_terminated_pods_past_the_threshold_go_evicted_first_then_oldest_then_by_name(tmp_path: Path) -> None:
    async with gc_world(tmp_path, threshold=3) as world:
        await world.client.create(NODES, node("n1", ready=True))
        for name in ("zeta", "alpha"):  # the same creationTimestamp: the name breaks the tie
            await world.create(PODS, pod(name, "n1"))
        for name in ("p2", "p3", "evicted", "running"):
            await world.clock.advance(1)
            await world.create(PODS, pod(name, "n1"))
        for name in ("zeta", "alpha", "p2"):
            await finish(world, name, "Succeeded")
        await world.settle()
        assert await world.names() == ["alpha", "evicted", "p2", "p3", "running", "zeta"]  # 3 terminated: kept
        await finish(world, "p3", "Failed")
        await finish(world, "evicted", "Failed", "Evicted")

        async def collected() -> list[str] | None:
            names = await world.names()
            return names if len(names) == 4 else None

        assert await world.eventually(collected, step=1.0) == ["p2", "p3", "running", "zeta"]
        await world.eventually(lambda: _counted(world, "terminated", 2), step=1.0)
        await world.settle()
        assert world.deleted_total("terminated") == 2


async def test_a_terminated_pod_held_by_a_finalizer_is_deleted_and_goes_when_released(tmp_path: Path) -> None:
    async with gc_world(tmp_path, threshold=1) as world:
        await world.client.create(NODES, node("n1", ready=True))
        await world.create(PODS, pod("tracked", "n1", finalizers=("batch.kubernetes.io/job-tracking",)))
        await world.clock.advance(1)
        await world.create(PODS, pod("newer", "n1"))
        await finish(world, "tracked", "Failed")
        await finish(world, "newer", "Succeeded")

        async def deleting() -> dict[str, Any] | None:
            found = await world.get(PODS, "tracked")
            return found if found["metadata"].get("deletionTimestamp") else None

        tracked = await world.eventually(deleting, step=1.0)
        await world.eventually(lambda: _counted(world, "terminated", 1), step=1.0)
        assert tracked["metadata"]["deletionGracePeriodSeconds"] == 0
        assert tracked["status"]["phase"] == "Failed" and not tracked["status"].get("conditions")
        assert (await world.get(PODS, "newer"))["metadata"].get("deletionTimestamp") is None
        writes = len(world.ctl.writes)
        await world.settle()
        assert len(world.ctl.writes) == writes  # nothing more to do until the finalizer goes
        await release(world, "tracked")
        await world.eventually(lambda: _gone(world, "tracked"))
        assert await world.names() == ["newer"]


async def test_a_threshold_of_zero_keeps_every_terminated_pod(tmp_path: Path) -> None:
    async with gc_world(tmp_path, threshold=0) as world:
        await world.client.create(NODES, node("n1", ready=True))
        for name in ("a", "b", "c"):
            await world.create(PODS, pod(name, "n1"))
            await finish(world, name, "Succeeded")
        await world.advance(60)
        assert await world.names() == ["a", "b", "c"]
        assert world.deleted_total("terminated") == 0


async def _gone(world: GCWorld, name: str) -> bool:
    return await world.maybe(PODS, name) is None


async def _force_deleted(world: GCWorld, name: str) -> dict[str, Any] | None:
    """The pod once the pod GC has failed it and deleted it with a grace period of 0 (a finalizer keeps it)."""
    found = await world.get(PODS, name)
    done = found["status"].get("phase") == "Failed" and found["metadata"].get("deletionGracePeriodSeconds") == 0
    return found if done else None


async def _counted(world: GCWorld, reason: str, at_least: int = 1) -> bool:
    """The metric counts a force-delete once its call has returned, after the write lands."""
    return world.deleted_total(reason) >= at_least and world.errors_total(reason) == 0


async def test_an_unscheduled_terminating_pod_is_failed_and_force_deleted(tmp_path: Path) -> None:
    async with gc_world(tmp_path) as world:
        await world.create(PODS, pod("pending", finalizers=(HOLD,)))
        await world.create(PODS, pod("untouched"))
        await world.client.delete(PODS, "pending", namespace=NS)

        found = await world.eventually(lambda: _force_deleted(world, "pending"), step=1.0)
        assert found["status"]["phase"] == "Failed"
        assert not [c for c in found["status"].get("conditions") or () if c["type"] == "DisruptionTarget"]
        await world.eventually(lambda: _counted(world, "unscheduled"), step=1.0)
        untouched = await world.get(PODS, "untouched")
        assert untouched["status"]["phase"] == "Pending" and not untouched["metadata"].get("deletionTimestamp")
        await release(world, "pending")
        await world.eventually(lambda: _gone(world, "pending"))


async def test_terminating_pods_on_an_out_of_service_node_are_failed_and_force_deleted(tmp_path: Path) -> None:
    async with gc_world(tmp_path) as world:
        await world.client.create(NODES, node("down"))  # never posted Ready: not Ready
        await world.create(PODS, pod("stuck", "down", finalizers=(HOLD,)))
        await world.create(PODS, pod("gone-soon", "down"))
        await world.create(PODS, pod("bystander", "down"))
        await world.client.delete(PODS, "stuck", namespace=NS)
        await world.client.delete(PODS, "gone-soon", namespace=NS)
        await world.advance(60)
        stuck = await world.get(PODS, "stuck")  # no kubelet confirms: terminating for ever
        assert stuck["metadata"]["deletionGracePeriodSeconds"] == 30 and stuck["status"]["phase"] == "Pending"
        assert await world.maybe(PODS, "gone-soon") is not None

        await world.client.patch(NODES, "down", {"spec": {"taints": [OUT_OF_SERVICE]}})

        stuck = await world.eventually(lambda: _force_deleted(world, "stuck"), step=1.0)
        assert stuck["status"]["phase"] == "Failed"
        assert not [c for c in stuck["status"].get("conditions") or () if c["type"] == "DisruptionTarget"]
        await world.eventually(lambda: _gone(world, "gone-soon"), step=1.0)
        bystander = await world.get(PODS, "bystander")  # not being deleted: the pod GC leaves it
        assert not bystander["metadata"].get("deletionTimestamp") and bystander["status"]["phase"] == "Pending"
        await world.eventually(lambda: _counted(world, "out-of-service", 2), step=1.0)


async def test_a_ready_node_with_the_out_of_service_taint_keeps_its_pods_until_it_is_not_ready(tmp_path: Path) -> None:
    async with gc_world(tmp_path) as world:
        await world.client.create(NODES, node("tainted", ready=True, taints=[OUT_OF_SERVICE]))
        await world.create(PODS, pod("web", "tainted"))
        await world.client.delete(PODS, "web", namespace=NS)
        await world.advance(60)
        assert (await world.get(PODS, "web"))["status"]["phase"] == "Pending"
        assert world.deleted_total("out-of-service") == 0
        await world.client.patch(NODES, "tainted", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                                 subresource="status", patch_type="merge")  # fmt: skip
        await world.eventually(lambda: _gone(world, "web"), step=1.0)
        await world.eventually(lambda: _counted(world, "out-of-service", 1), step=1.0)
