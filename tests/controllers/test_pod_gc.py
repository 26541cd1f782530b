"""Pod garbage collector (orphans): pods bound to a node that is gone are failed and deleted after quarantine.

Upstream (release 1.32): k/k ``pkg/controller/podgc/gc_controller.go`` (``gcOrphaned``, ``quarantineTime``
40 s, ``discoverDeletedNodes``' live GET, ``markFailedAndDeletePodWithCondition``: phase Failed with
``DisruptionTarget``/``DeletionByPodGC``, then a delete with grace period 0). FakeClock throughout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions

from ._sim_world import NODES, NS, PODS, condition, open_world
from .test_daemonset import DAEMONSETS, daemon_pods, daemonset, node_of, settled

HOLD = "example.com/hold"


def node(name: str, **labels: str) -> dict[str, Any]:
    """A node no kubelet runs (pods bound to it stay Pending), with room for pods so the scheduler binds there."""
    room = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": room, "allocatable": room}}


def bound_pod(name: str, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "finalizers": [HOLD]},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "nginx"}]}}


async def test_a_pod_on_a_deleted_node_is_failed_then_deleted_after_the_quarantine(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=("pod-garbage-collector",)) as world:
        await world.client.create(NODES, node("gone"))
        await world.create(PODS, bound_pod("orphan", "gone"))
        await world.create(PODS, bound_pod("kept", "kubeloop-node-1"))
        await world.client.delete(NODES, "gone")
        await world.advance(39)
        assert not (await world.get(PODS, "orphan"))["metadata"].get("deletionTimestamp")

        async def deleted() -> dict[str, Any] | None:
            pod = await world.get(PODS, "orphan")
            return pod if pod["metadata"].get("deletionTimestamp") else None

        pod = await world.eventually(deleted, step=1.0)
        assert pod["status"]["phase"] == "Failed"
        target = condition(pod, "DisruptionTarget")
        assert (target["status"], target["reason"], target["message"]) == (
            "True", "DeletionByPodGC", "PodGC: node no longer exists")
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 0
        assert not (await world.get(PODS, "kept"))["metadata"].get("deletionTimestamp")

        async def counted() -> bool:  # pkg/controller/podgc/metrics, reason "orphaned"
            labels = {"namespace": NS, "reason": "orphaned"}
            return world.manager.metrics.sample("pod_gc_collector_force_delete_pods_total", labels) == 1

        await world.eventually(counted)


async def test_a_node_that_comes_back_during_the_quarantine_keeps_its_pods(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=("pod-garbage-collector",)) as world:
        await world.create(PODS, bound_pod("early", "late-node"))
        await world.advance(20)
        await world.client.create(NODES, node("late-node"))
        await world.advance(30)
        await world.settle()
        pod = await world.get(PODS, "early")
        assert not pod["metadata"].get("deletionTimestamp") and pod["status"].get("phase") != "Failed"


async def test_a_daemon_pod_of_a_removed_node_goes_and_the_set_stops_counting_it(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2),
                          controllers=("daemonset", "pod-garbage-collector")) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, desiredNumberScheduled=2, numberAvailable=2)
        await world.client.create(NODES, node("extra-node"))
        await settled(world, desiredNumberScheduled=3, currentNumberScheduled=3)

        async def bound() -> bool:
            return "extra-node" in {node_of(p) for p in await daemon_pods(world)}

        await world.eventually(bound)
        await world.client.delete(NODES, "extra-node")
        await settled(world, desiredNumberScheduled=2, currentNumberScheduled=2)

        async def collected() -> bool:
            items = (await world.client.list(PODS, namespace=NS)).get("items") or []
            return not [p for p in items if node_of(p) == "extra-node"]

        await world.eventually(collected, step=1.0)
        assert sorted(node_of(p) for p in await daemon_pods(world)) == ["kubeloop-node-1", "kubeloop-node-2"]


async def test_an_orphans_condition_replaces_one_of_its_type_in_place_and_keeps_the_others(tmp_path: Path) -> None:
    # UpdatePodCondition (same status: lastTransitionTime kept) sent as PatchPodStatus's strategic merge:
    # conditions merge by type, so those of other writers stay where they were.
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=("pod-garbage-collector",)) as world:
        await world.client.create(NODES, node("gone"))
        await world.create(PODS, bound_pod("orphan", "gone"))
        earlier = "2026-01-01T00:00:00Z"
        conditions = [{"type": "PodScheduled", "status": "True"},
                      {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                       "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": earlier},
                      {"type": "Ready", "status": "False"}]  # fmt: skip
        await world.client.patch(PODS, "orphan", {"status": {"conditions": conditions}}, namespace=NS,
                                 subresource="status", patch_type="merge")  # fmt: skip
        await world.client.delete(NODES, "gone")

        async def failed() -> dict[str, Any] | None:
            pod = await world.get(PODS, "orphan")
            return pod if pod["status"].get("phase") == "Failed" else None

        pod = await world.eventually(failed, step=1.0)
        assert [c["type"] for c in pod["status"]["conditions"]] == ["PodScheduled", "DisruptionTarget", "Ready"]
        target = condition(pod, "DisruptionTarget")
        assert (target["reason"], target["message"], target["lastTransitionTime"]) == (
            "DeletionByPodGC", "PodGC: node no longer exists", earlier)
