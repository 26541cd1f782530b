"""The scheduler binds pods to nodes that fit, through pods/binding, and says why when none does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions

from ._sim_world import NODES, PODS, PVCS, World, condition, open_world, pod


async def _bound(world: World, name: str) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name)).get("spec", {}).get("nodeName") or "")

    return str(await world.eventually(check))


async def test_simulated_nodes_register_with_capacity_labels_and_kubelet_version(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2, node_cpu="4")) as world:
        node = await world.get(NODES, "kubeloop-node-2")
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "kubeloop-node-2"
        assert "node-role.kubernetes.io/worker" in node["metadata"]["labels"]
        assert node["status"]["allocatable"]["cpu"] == "4"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.0"
        assert condition(node, "Ready")["status"] == "True"
        assert any(a["type"] == "InternalIP" for a in node["status"]["addresses"])


async def test_pending_pod_is_bound_and_marked_scheduled(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(PODS, pod("web"))
        node = await _bound(world, "web")
        assert node.startswith("kubeloop-node-")
        assert condition(await world.get(PODS, "web"), "PodScheduled")["status"] == "True"
        assert world.ctl.count(verb="create", resource="pods") >= 1


async def test_pods_spread_by_requests_and_never_overcommit_a_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2, node_cpu="2")) as world:
        for i in range(5):
            await world.create(PODS, pod(f"p{i}", cpu="900m"))
        placed: dict[str, int] = {}
        for i in range(4):
            node = await _bound(world, f"p{i}")
            placed[node] = placed.get(node, 0) + 1
        assert sorted(placed.values()) == [2, 2]

        async def unschedulable() -> dict[str, Any]:
            return condition(await world.get(PODS, "p4"), "PodScheduled")

        cond = await world.eventually(unschedulable)
        assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
        # NodeResourcesFit fails with Unschedulable, so preemption is tried on both nodes and finds no
        # lower-priority pod to evict (DefaultPreemption SelectVictimsOnNode).
        assert cond["message"] == ("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                                   "available: 2 No preemption victims found for incoming pod.")
        assert not (await world.get(PODS, "p4"))["spec"].get("nodeName")


async def test_freed_capacity_lets_a_waiting_pod_schedule(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1, node_cpu="1")) as world:
        await world.create(PODS, pod("big", cpu="800m"))
        await _bound(world, "big")
        await world.create(PODS, pod("next", cpu="800m"))
        await world.eventually(lambda: _unschedulable(world, "next"))
        await world.client.delete(PODS, "big", namespace="ns", grace_period_seconds=0)
        assert await _bound(world, "next") == "kubeloop-node-1"


async def _unschedulable(world: World, name: str) -> bool:
    return condition(await world.get(PODS, name), "PodScheduled").get("reason") == "Unschedulable"


async def test_node_selector_unschedulable_nodes_and_taints_are_respected(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        n1 = await world.get(NODES, "kubeloop-node-1")
        await world.client.patch(NODES, "kubeloop-node-1", {"spec": {"unschedulable": True}})
        await world.client.patch(NODES, "kubeloop-node-2", {"spec": {"taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}})
        assert n1["spec"].get("unschedulable") is None
        await world.settle()
        await world.create(PODS, pod("anywhere"))
        assert await _bound(world, "anywhere") == "kubeloop-node-3"
        await world.create(PODS, pod("tolerant", tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
            nodeSelector={"kubernetes.io/hostname": "kubeloop-node-2"}))
        assert await _bound(world, "tolerant") == "kubeloop-node-2"
        await world.create(PODS, pod("nowhere", nodeSelector={"disk": "ssd"}))
        await world.eventually(lambda: _unschedulable(world, "nowhere"))
        message = condition(await world.get(PODS, "nowhere"), "PodScheduled")["message"]
        assert message.startswith("0/3 nodes are available: ")
        assert "1 node(s) were unschedulable" in message
        assert "1 node(s) had untolerated taint {dedicated: db}" in message
        assert "1 node(s) didn't match Pod's node affinity/selector" in message


async def test_unschedulable_condition_is_written_once(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1, node_cpu="1")) as world:
        await world.create(PODS, pod("huge", cpu="4"))
        await world.eventually(lambda: _unschedulable(world, "huge"))
        before = await world.get(PODS, "huge")
        assert await world.quiet_writes() == 0
        after = await world.get(PODS, "huge")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_pod_waits_for_its_claim_and_is_bound_once_the_claim_is(tmp_path: Path) -> None:
    # VolumeBinding PreFilter: no node is tried while a claim is missing or unbound (Immediate mode).
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]))

        async def waiting() -> str:
            return str(condition(await world.get(PODS, "web"), "PodScheduled").get("message") or "")

        message = await world.eventually(waiting)
        assert message.startswith('0/2 nodes are available: persistentvolumeclaim "data" not found.')
        assert not (await world.get(PODS, "web"))["spec"].get("nodeName")
        await world.create(PVCS, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                                  "spec": {"accessModes": ["ReadWriteOnce"],
                                           "resources": {"requests": {"storage": "1Gi"}}}})  # fmt: skip
        assert (await _bound(world, "web")).startswith("kubeloop-node-")
        assert (await world.get(PVCS, "data"))["status"]["phase"] == "Bound"
