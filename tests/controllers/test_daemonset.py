"""DaemonSet controller on the simulated cluster: one pod per eligible node, bound there by the scheduler.

Upstream (release 1.32): k/k ``pkg/controller/daemon/daemon_controller.go`` (``NodeShouldRunDaemonPod``,
``podsShouldBeOnNode``, ``syncNodes``, ``updateDaemonSetStatus``), ``update.go`` (``rollingUpdate``,
``constructHistory``, ``cleanupHistory``) and ``util/daemonset_util.go`` (``AddOrUpdateDaemonPodTolerations``,
``CreatePodTemplate``, ``ReplaceDaemonSetPodNodeNameNodeAffinity``). The scheduler and simulated
kubelet drive the pods; nobody plays them. All time is the shared FakeClock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NODES, NS, PODS, World, condition, open_world

DAEMONSETS = builtin("apps", "daemonsets")
REVISIONS = builtin("apps", "controllerrevisions")
EVENTS = builtin("", "events")
NODE_NAMES = ["kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]


def daemonset(name: str = "agent", *, image: str = "nginx:1.25", pod_spec: dict[str, Any] | None = None,
              **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}], **(pod_spec or {})}},
                 **spec},
    }  # fmt: skip


async def daemon_pods(world: World, app: str = "agent") -> list[dict[str, Any]]:
    items = (await world.client.list(PODS, namespace=NS, label_selector=f"app={app}")).get("items") or []
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    return condition(pod, "Ready").get("status") == "True"


async def settled(world: World, name: str = "agent", *, step: float = 0.0, **expected: int) -> dict[str, Any]:
    """The set's status once it observed its generation and shows ``expected`` (``step``: fake seconds
    per poll, for pods that wait out their grace period)."""

    async def check() -> dict[str, Any]:
        ds = await world.get(DAEMONSETS, name)
        status = ds.get("status") or {}
        assert status.get("observedGeneration") == ds["metadata"]["generation"], status
        for key, value in expected.items():
            assert status.get(key, 0) == value, (key, status)
        return ds

    result: dict[str, Any] = await world.eventually(check, step=step)
    return result


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


async def test_one_pod_per_node_bound_by_the_scheduler_with_daemon_labels_and_tolerations(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), controllers=("daemonset",)) as world:
        ds = await world.create(DAEMONSETS, daemonset())
        done = await settled(world, desiredNumberScheduled=3, currentNumberScheduled=3, numberReady=3,
                             numberAvailable=3, updatedNumberScheduled=3, numberMisscheduled=0, numberUnavailable=0)
        pods = await daemon_pods(world)
        assert sorted(node_of(p) for p in pods) == NODE_NAMES
        assert all(ready(p) for p in pods)
        revisions = (await world.client.list(REVISIONS, namespace=NS)).get("items") or []
        assert len(revisions) == 1 and revisions[0]["revision"] == 1
        revision_hash = revisions[0]["metadata"]["labels"]["controller-revision-hash"]
        assert revisions[0]["metadata"]["name"] == f"agent-{revision_hash}"
        assert revisions[0]["data"]["spec"]["template"]["$patch"] == "replace"
        for pod in pods:
            meta, spec = pod["metadata"], pod["spec"]
            assert meta["generateName"] == "agent-"
            assert meta["labels"] == {"app": "agent", "controller-revision-hash": revision_hash,
                                      "pod-template-generation": "1"}
            assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                                "uid": ds["metadata"]["uid"], "controller": True,
                                                "blockOwnerDeletion": True}]
            assert spec["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [node_of(pod)]}]}]}}}
            assert [(t["key"], t["effect"]) for t in spec["tolerations"]] == [
                ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")]
            assert all(t["operator"] == "Exists" and "tolerationSeconds" not in t for t in spec["tolerations"])
        assert done["status"]["observedGeneration"] == 1


async def patch_node(world: World, name: str, patch: dict[str, Any]) -> None:
    await world.client.patch(NODES, name, patch, patch_type="merge")


async def test_node_selector_and_taints_decide_which_nodes_run_a_pod(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), controllers=("daemonset",)) as world:
        await patch_node(world, "kubeloop-node-1", {"metadata": {"labels": {"disk": "ssd"}}})
        await patch_node(world, "kubeloop-node-2", {"metadata": {"labels": {"disk": "ssd"}},
                                                    "spec": {"taints": [{"key": "dedicated", "value": "db",
                                                                         "effect": "NoSchedule"}]}})
        await world.create(DAEMONSETS, daemonset(pod_spec={"nodeSelector": {"disk": "ssd"}}))
        await settled(world, desiredNumberScheduled=1, currentNumberScheduled=1, numberReady=1)
        assert [node_of(p) for p in await daemon_pods(world)] == ["kubeloop-node-1"]
        # A node that comes to match gets its pod (updateNode: the verdict changed).
        await patch_node(world, "kubeloop-node-3", {"metadata": {"labels": {"disk": "ssd"}}})
        await settled(world, desiredNumberScheduled=2, currentNumberScheduled=2, numberReady=2)
        # An untolerated NoExecute taint: the pod may not even keep running there.
        await patch_node(world, "kubeloop-node-3", {"spec": {"taints": [{"key": "evict", "effect": "NoExecute"}]}})
        # The evicted pod counts as misscheduled until its grace period is over, as upstream counts it.
        await settled(world, desiredNumberScheduled=1, currentNumberScheduled=1, numberMisscheduled=0, step=1.0)
        assert [node_of(p) for p in await daemon_pods(world)] == ["kubeloop-node-1"]


async def test_an_untolerated_no_schedule_taint_keeps_the_running_pod_as_misscheduled(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, desiredNumberScheduled=2, currentNumberScheduled=2, numberReady=2)
        await patch_node(world, "kubeloop-node-2", {"spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}})
        # shouldRun false, shouldContinueRunning true: the pod stays, counted as misscheduled.
        await settled(world, desiredNumberScheduled=1, currentNumberScheduled=1, numberMisscheduled=1)
        assert sorted(node_of(p) for p in await daemon_pods(world)) == ["kubeloop-node-1", "kubeloop-node-2"]


async def test_the_daemon_tolerations_let_pods_onto_an_unschedulable_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await patch_node(world, "kubeloop-node-2", {"spec": {"unschedulable": True, "taints": [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}})
        await world.create(DAEMONSETS, daemonset())
        await settled(world, desiredNumberScheduled=2, currentNumberScheduled=2, numberReady=2)
        assert sorted(node_of(p) for p in await daemon_pods(world)) == ["kubeloop-node-1", "kubeloop-node-2"]


async def test_a_new_node_gets_a_pod_and_an_unbound_pod_for_a_removed_node_goes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset(pod_spec={"nodeSelector": {"pool": "extra"}}))
        await settled(world, desiredNumberScheduled=0)
        extra = {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": "extra-node", "labels": {"pool": "extra"}},
                 "spec": {"taints": [{"key": "hold", "effect": "NoSchedule"}]}}
        await world.client.create(NODES, extra)
        # The set's pod tolerates nothing called "hold": no pod yet.
        await settled(world, desiredNumberScheduled=0)
        await world.client.patch(NODES, "extra-node", {"spec": {"taints": None}}, patch_type="merge")
        await settled(world, desiredNumberScheduled=1, currentNumberScheduled=1)
        pods = await daemon_pods(world)
        assert len(pods) == 1 and not node_of(pods[0])  # a node without allocatable pods: never bound
        target = pods[0]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert target["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["extra-node"]
        await world.client.delete(NODES, "extra-node")
        await settled(world, desiredNumberScheduled=0, currentNumberScheduled=0)

        async def gone() -> bool:
            return [p for p in await daemon_pods(world) if not node_of(p)] == []

        await world.eventually(gone)


async def test_rolling_update_replaces_pods_one_node_at_a_time_and_records_history(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, desiredNumberScheduled=3, numberAvailable=3, updatedNumberScheduled=3)
        before = {p["metadata"]["name"] for p in await daemon_pods(world)}
        seen_unavailable: list[int] = []

        async def watch_status() -> None:
            while True:
                pods = await daemon_pods(world)
                seen_unavailable.append(sum(not ready(p) for p in pods) + max(3 - len(pods), 0))
                await world.settle(1)

        world.tasks.append(asyncio.create_task(watch_status()))
        await world.client.patch(DAEMONSETS, "agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.27"}]}}}}, namespace=NS, patch_type="strategic")
        # Without surge a node gets its new pod once the old one has terminated (its grace period).
        done = await settled(world, desiredNumberScheduled=3, numberAvailable=3, updatedNumberScheduled=3,
                             currentNumberScheduled=3, step=1.0)
        assert done["metadata"]["generation"] == 2
        pods = await daemon_pods(world)
        assert not before & {p["metadata"]["name"] for p in pods}
        assert sorted(node_of(p) for p in pods) == NODE_NAMES
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"}
        assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
        # maxUnavailable 1: never more than one node without an available pod.
        assert max(seen_unavailable) <= 1
        revisions = sorted((await world.client.list(REVISIONS, namespace=NS)).get("items") or [],
                           key=lambda r: r["revision"])
        assert [r["revision"] for r in revisions] == [1, 2]
        assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {
            revisions[1]["metadata"]["labels"]["controller-revision-hash"]}
        assert revisions[1]["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"


async def test_rolling_back_to_an_old_template_renumbers_its_revision(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, updatedNumberScheduled=2, numberAvailable=2)
        first = ((await world.client.list(REVISIONS, namespace=NS)).get("items") or [])[0]
        await world.client.patch(DAEMONSETS, "agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.27"}]}}}}, namespace=NS, patch_type="strategic")
        await settled(world, updatedNumberScheduled=2, numberAvailable=2, step=1.0)
        # What kubectl rollout undo sends: the old revision's data as a strategic merge patch.
        await world.client.patch(DAEMONSETS, "agent", first["data"], namespace=NS, patch_type="strategic")
        await settled(world, updatedNumberScheduled=2, numberAvailable=2, step=1.0)
        revisions = {r["metadata"]["name"]: r["revision"]
                     for r in (await world.client.list(REVISIONS, namespace=NS)).get("items") or []}
        assert len(revisions) == 2 and revisions[first["metadata"]["name"]] == 3
        assert {p["spec"]["containers"][0]["image"] for p in await daemon_pods(world)} == {"nginx:1.25"}


async def test_on_delete_leaves_old_pods_until_they_are_deleted(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset(updateStrategy={"type": "OnDelete"}))
        await settled(world, updatedNumberScheduled=2, numberAvailable=2)
        await world.client.patch(DAEMONSETS, "agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.27"}]}}}}, namespace=NS, patch_type="strategic")
        await settled(world, updatedNumberScheduled=0, numberAvailable=2)
        await world.settle()
        pods = await daemon_pods(world)
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.25"}
        victim = next(p for p in pods if node_of(p) == "kubeloop-node-1")
        await world.client.delete(PODS, victim["metadata"]["name"], namespace=NS, grace_period_seconds=0)
        await settled(world, updatedNumberScheduled=1, numberAvailable=2, currentNumberScheduled=2)
        images = {node_of(p): p["spec"]["containers"][0]["image"] for p in await daemon_pods(world)}
        assert images == {"kubeloop-node-1": "nginx:1.27", "kubeloop-node-2": "nginx:1.25"}


async def test_max_surge_starts_the_new_pod_before_the_old_one_goes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset(updateStrategy={
            "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}))
        await settled(world, updatedNumberScheduled=2, numberAvailable=2)
        most_on_a_node = 0

        async def watch() -> None:
            nonlocal most_on_a_node
            while True:
                per_node: dict[str, int] = {}
                for pod in await daemon_pods(world):
                    per_node[node_of(pod)] = per_node.get(node_of(pod), 0) + 1
                most_on_a_node = max([most_on_a_node, *per_node.values()])
                await world.settle(1)

        world.tasks.append(asyncio.create_task(watch()))
        await world.client.patch(DAEMONSETS, "agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.27"}]}}}}, namespace=NS, patch_type="strategic")
        await settled(world, updatedNumberScheduled=2, numberAvailable=2, currentNumberScheduled=2, step=1.0)

        async def one_each() -> bool:
            pods = await daemon_pods(world)
            return sorted(node_of(p) for p in pods) == ["kubeloop-node-1", "kubeloop-node-2"] and all(
                p["spec"]["containers"][0]["image"] == "nginx:1.27" for p in pods)

        await world.eventually(one_each, step=1.0)
        assert most_on_a_node == 2  # old and new side by side on a node during the surge


async def test_min_ready_seconds_counts_available_on_the_fake_clock(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset(minReadySeconds=30))
        await settled(world, numberReady=2, numberAvailable=0, numberUnavailable=2)
        await world.advance(29)
        await settled(world, numberReady=2, numberAvailable=0, numberUnavailable=2)
        # Requeued after minReadySeconds (and again, as upstream, while ready pods are not yet available).
        await settled(world, numberReady=2, numberAvailable=2, numberUnavailable=0, step=2.0)
        assert world.clock.monotonic() <= 80


async def test_deleting_the_set_removes_its_pods_and_history_through_the_gc(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), controllers=("daemonset", "garbage-collector")) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, numberAvailable=2)
        await world.client.delete(DAEMONSETS, "agent", namespace=NS)

        async def empty() -> bool:
            revisions = (await world.client.list(REVISIONS, namespace=NS)).get("items") or []
            return not await daemon_pods(world) and not revisions

        await world.eventually(empty, step=1.0)


async def test_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, numberAvailable=3, updatedNumberScheduled=3)
        events = [e for e in (await world.client.list(EVENTS, namespace=NS)).get("items") or []
                  if e["involvedObject"].get("kind") == "DaemonSet"]
        assert sorted({(e["source"]["component"], e["reason"]) for e in events}) == [
            ("daemonset-controller", "SuccessfulCreate")]
        assert sum(e.get("count", 1) for e in events) == 3
        writes = await world.quiet_writes()
        assert writes == 0


async def test_a_failed_daemon_pod_is_replaced_with_a_warning_event(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=("daemonset",)) as world:
        await world.create(DAEMONSETS, daemonset())
        await settled(world, desiredNumberScheduled=1, numberAvailable=1)
        [pod] = await daemon_pods(world)
        name = pod["metadata"]["name"]
        await world.client.patch(PODS, name, {"status": {"phase": "Failed", "reason": "Evicted"}}, namespace=NS,
                                 subresource="status", patch_type="merge")

        async def replaced() -> bool:
            pods = await daemon_pods(world)
            return len(pods) == 1 and pods[0]["metadata"]["name"] != name and ready(pods[0])

        await world.eventually(replaced, step=1.0)
        events = [(e["type"], e["reason"], e["message"]) for e in (await world.client.list(EVENTS, namespace=NS)).get("items") or []
                  if e["involvedObject"].get("kind") == "DaemonSet"]
        assert ("Warning", "FailedDaemonPod",
                f"Found failed daemon pod {NS}/{name} on node kubeloop-node-1, will try to kill it") in events
        assert ("Normal", "SuccessfulDelete", f"Deleted pod: {name}") in events
