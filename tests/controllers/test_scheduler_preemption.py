"""Scheduler preemption end to end: a higher-priority pod that fits nowhere evicts the pods upstream's
DefaultPreemption chooses (kube-scheduler 1.32), is nominated, and binds once they are gone; pending
pods are tried in priority order; nominated pods keep their room.

Pods carry ``priorityClassName`` and the matching ``spec.priority`` / ``preemptionPolicy``, which the
Priority admission plugin accepts (it refuses only values that differ from the class's); the classes
are created where the server serves ``scheduling.k8s.io/v1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import NotFound, ResourceInfo
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NODES, NS, PDBS, PODS, World, condition, open_world, pod

DEPLOYMENTS = builtin("apps", "deployments")
EVENTS = builtin("", "events")
PRIORITY_CLASSES = ResourceInfo(group="scheduling.k8s.io", version="v1", kind="PriorityClass",
                                plural="priorityclasses", singular="priorityclass", namespaced=False)
CLASSES = {"low": 100, "high": 1000, "critical": 2000}
NODE1, NODE2 = "kubeloop-node-1", "kubeloop-node-2"


async def priority_classes(world: World) -> None:
    for name, value in {**CLASSES, "high-never": CLASSES["high"]}.items():
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "preemptionPolicy": "Never" if name.endswith("never") else "PreemptLowerPriority"}
        try:
            await world.client.create(PRIORITY_CLASSES, body)
        except NotFound:
            return  # no PriorityClass API here: the pods' own spec.priority is what the scheduler reads


def priority(name: str) -> dict[str, Any]:
    never = name.endswith("-never")
    return {"priorityClassName": name, "priority": CLASSES[name.removesuffix("-never")],
            "preemptionPolicy": "Never" if never else "PreemptLowerPriority"}


def on(node: str) -> dict[str, Any]:
    return {"nodeSelector": {"kubernetes.io/hostname": node}}


async def bound(world: World, name: str, *, step: float = 0.0) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name))["spec"].get("nodeName") or "")

    return str(await world.eventually(check, step=step))


async def running(world: World, *names: str) -> None:
    async def check() -> bool:
        pods = [await world.get(PODS, n) for n in names]
        return all(p.get("status", {}).get("startTime") for p in pods)

    await world.eventually(check)


async def scheduled_message(world: World, name: str, expected: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        obj = await world.get(PODS, name)
        return obj if condition(obj, "PodScheduled").get("message") == expected else None

    result: dict[str, Any] = await world.eventually(check)
    return result


async def gone(world: World, name: str, *, step: float = 0.0) -> None:
    async def check() -> bool:
        return await world.maybe(PODS, name) is None

    await world.eventually(check, step=step)


def options(nodes: int = 2) -> SimulationOptions:
    return SimulationOptions(nodes=nodes, node_cpu="2")


async def test_a_higher_priority_pod_preempts_the_victim_upstream_picks_and_binds_there(tmp_path: Path) -> None:
    async with open_world(tmp_path, options(), workloads=True) as world:
        await priority_classes(world)
        template = {"metadata": {"labels": {"app": "filler"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx",
                                             "resources": {"requests": {"cpu": "900m"}}}], **priority("low")}}
        await world.create(DEPLOYMENTS, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "filler"},
                                         "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "filler"}},
                                                  "template": template}})

        async def fillers() -> list[dict[str, Any]]:
            items = (await world.client.list(PODS, namespace=NS, label_selector="app=filler"))["items"]
            live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
            return live if all(p["status"].get("startTime") for p in live) else []

        first = await world.eventually(lambda: _count(fillers, 3))
        await world.advance(10)
        await world.client.patch(DEPLOYMENTS, "filler", {"spec": {"replicas": 4}}, namespace=NS)
        placed = await world.eventually(lambda: _count(fillers, 4))
        latest = next(p for p in placed if p["metadata"]["name"] not in {q["metadata"]["name"] for q in first})
        target = latest["spec"]["nodeName"]  # the node holding one early and one late filler

        urgent = await world.create(PODS, pod("urgent", cpu="1", **priority("high")))
        # Each node frees room by evicting its less important filler (the reprieve keeps the earlier
        # one); pickOneNodeForPreemption ties on PDBs, priorities and counts, and takes the node whose
        # victim started latest.
        waiting = await scheduled_message(world, "urgent", "0/2 nodes are available: 2 Insufficient cpu.")
        assert waiting["status"]["nominatedNodeName"] == target
        victim = await world.get(PODS, latest["metadata"]["name"])
        assert victim["metadata"].get("deletionTimestamp")
        assert victim["metadata"]["deletionGracePeriodSeconds"] == 30  # a graceful delete, as upstream's
        assert {k: condition(victim, "DisruptionTarget").get(k) for k in ("status", "reason", "message")} == {
            "status": "True", "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod"}
        others = [p for p in placed if p["metadata"]["name"] != latest["metadata"]["name"]]
        for other in others:
            assert not (await world.get(PODS, other["metadata"]["name"]))["metadata"].get("deletionTimestamp")

        async def preempted() -> list[dict[str, Any]]:
            items = (await world.client.list(EVENTS, namespace=NS))["items"]
            return [e for e in items if e["reason"] == "Preempted"]

        [event] = await world.eventually(preempted)
        assert event["involvedObject"]["name"] == latest["metadata"]["name"] and event["type"] == "Normal"
        assert event["message"] == f"Preempted by pod {urgent['metadata']['uid']} on node {target}"
        assert event["source"]["component"] == "default-scheduler" and event["action"] == "Preempting"
        assert event["related"]["name"] == "urgent" and event["related"]["kind"] == "Pod"

        # The replacement filler (same priority as the others) finds no victims and no room: the
        # nominated pod's request counts on its node.
        assert await bound(world, "urgent", step=1.0) == target
        async def replacement() -> list[dict[str, Any]]:
            items = (await world.client.list(PODS, namespace=NS, label_selector="app=filler"))["items"]
            return [p for p in items if not p["spec"].get("nodeName")]

        [spare] = await world.eventually(replacement)
        await scheduled_message(world, spare["metadata"]["name"], (
            "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
            "2 No preemption victims found for incoming pod."))
        for other in others:
            assert (await world.get(PODS, other["metadata"]["name"]))["spec"]["nodeName"]


async def _count(source: Any, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = await source()
    return items if len(items) == n and all(p["spec"].get("nodeName") for p in items) else []


async def test_a_pdb_steers_preemption_to_the_node_without_a_violation(tmp_path: Path) -> None:
    async with open_world(tmp_path, options()) as world:
        await priority_classes(world)
        low = {"cpu": "900m", **priority("low")}
        await world.create(PODS, pod("guarded-1", labels={"app": "guarded"}, **low, **on(NODE1)))
        await world.create(PODS, pod("spare-1", labels={"app": "spare"}, **low, **on(NODE1)))
        await world.create(PODS, pod("guarded-2", labels={"app": "guarded"}, **low, **on(NODE2)))
        await running(world, "guarded-1", "spare-1", "guarded-2")
        await world.advance(10)
        await world.create(PODS, pod("guarded-3", labels={"app": "guarded"}, **low, **on(NODE2)))
        await running(world, "guarded-3")
        await world.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                  "metadata": {"name": "guarded"},
                                  "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "guarded"}}}})

        async def budget_at_zero() -> bool:
            status = (await world.get(PDBS, "guarded")).get("status") or {}
            return status.get("currentHealthy") == 3 and status.get("disruptionsAllowed") == 0

        await world.eventually(budget_at_zero, step=1.0)
        # Without the budget node 2 would win (its victim, guarded-3, started last). With it, evicting
        # guarded-3 violates the budget, while node 1 reprieves guarded-1 first and evicts spare-1.
        await world.create(PODS, pod("urgent", cpu="1", **priority("high")))
        waiting = await scheduled_message(world, "urgent", "0/2 nodes are available: 2 Insufficient cpu.")
        assert waiting["status"]["nominatedNodeName"] == NODE1
        assert (await world.get(PODS, "spare-1"))["metadata"].get("deletionTimestamp")
        for name in ("guarded-1", "guarded-2", "guarded-3"):
            assert not (await world.get(PODS, name))["metadata"].get("deletionTimestamp")
        assert await bound(world, "urgent", step=1.0) == NODE1


async def test_preemption_policy_never_waits_without_evicting(tmp_path: Path) -> None:
    async with open_world(tmp_path, options(nodes=1)) as world:
        await priority_classes(world)
        await world.create(PODS, pod("filler", cpu="1500m", **priority("low")))
        await running(world, "filler")
        await world.create(PODS, pod("polite", cpu="1", **priority("high-never")))
        waiting = await scheduled_message(world, "polite", (
            "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."))
        assert "nominatedNodeName" not in waiting["status"]
        assert await world.quiet_writes() == 0
        assert not (await world.get(PODS, "filler"))["metadata"].get("deletionTimestamp")


async def test_pending_pods_are_tried_by_priority_then_arrival(tmp_path: Path) -> None:
    async with open_world(tmp_path, options(nodes=1)) as world:
        await priority_classes(world)
        await world.create(PODS, pod("blocker", cpu="1500m", **priority("critical")))
        await bound(world, "blocker")
        # Named so that name order would favour the low one; both wait behind a pod they cannot preempt.
        await world.create(PODS, pod("a-low", cpu="1500m", **priority("low")))
        await world.create(PODS, pod("b-high", cpu="1500m", **priority("high")))
        for name in ("a-low", "b-high"):
            await scheduled_message(world, name, "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes "
                                                 "are available: 1 No preemption victims found for incoming pod.")
        await world.client.delete(PODS, "blocker", namespace=NS, grace_period_seconds=0)
        assert await bound(world, "b-high") == NODE1
        await world.settle()
        assert not (await world.get(PODS, "a-low"))["spec"].get("nodeName")


async def test_a_nominated_pod_keeps_the_room_freed_for_it(tmp_path: Path) -> None:
    async with open_world(tmp_path, options(nodes=1)) as world:
        await priority_classes(world)
        await world.create(PODS, pod("quick", cpu="900m", terminationGracePeriodSeconds=10, **priority("low")))
        await world.create(PODS, pod("slow", cpu="900m", terminationGracePeriodSeconds=60, **priority("low")))
        await running(world, "quick", "slow")
        await world.create(PODS, pod("urgent", cpu="1800m", **priority("high")))
        waiting = await scheduled_message(world, "urgent", "0/1 nodes are available: 1 Insufficient cpu.")
        assert waiting["status"]["nominatedNodeName"] == NODE1
        await world.create(PODS, pod("small", cpu="900m", **priority("low")))
        await gone(world, "quick", step=1.0)
        # quick's room is the urgent pod's: the small pod (lower priority) does not take it, and the
        # urgent pod, tried again, does not preempt more while its victim terminates.
        await scheduled_message(world, "small", "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes "
                                                "are available: 1 No preemption victims found for incoming pod.")
        await scheduled_message(world, "urgent", "0/1 nodes are available: 1 Insufficient cpu. preemption: not "
                                                 "eligible due to a terminating pod on the nominated node.")
        assert not (await world.get(PODS, "small"))["spec"].get("nodeName")
        assert await bound(world, "urgent", step=1.0) == NODE1
        assert not (await world.get(PODS, "small"))["spec"].get("nodeName")
        assert (await world.get(NODES, NODE1))["metadata"]["name"] == NODE1


async def test_victims_that_would_not_free_enough_are_not_evicted(tmp_path: Path) -> None:
    async with open_world(tmp_path, options()) as world:
        await priority_classes(world)
        await world.create(PODS, pod("low", cpu="500m", **priority("low"), **on(NODE1)))
        await world.create(PODS, pod("pinned-1", cpu="1", **priority("critical"), **on(NODE1)))
        await world.create(PODS, pod("pinned-2", cpu="1500m", **priority("critical"), **on(NODE2)))
        await running(world, "low", "pinned-1", "pinned-2")
        await world.create(PODS, pod("urgent", cpu="1600m", **priority("high")))
        # Node 1 without its lower-priority pod still lacks cpu (SelectVictimsOnNode returns the
        # filter's status); node 2 has nothing of lower priority.
        waiting = await scheduled_message(world, "urgent", (
            "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 1 Insufficient cpu, "
            "1 No preemption victims found for incoming pod."))
        assert "nominatedNodeName" not in waiting["status"]
        assert not (await world.get(PODS, "low"))["metadata"].get("deletionTimestamp")


async def test_a_prefilter_failure_gives_the_never_policy_sentence(tmp_path: Path) -> None:
    async with open_world(tmp_path, options(nodes=1)) as world:
        await priority_classes(world)
        volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "missing"}}]
        await world.create(PODS, pod("polite", volumes=volumes, **priority("high-never")))
        await world.create(PODS, pod("eager", volumes=volumes, **priority("high")))
        await scheduled_message(world, "polite", '0/1 nodes are available: persistentvolumeclaim "missing" not found. '
                                                 "preemption: not eligible due to preemptionPolicy=Never.")
        await scheduled_message(world, "eager", '0/1 nodes are available: persistentvolumeclaim "missing" not found. '
                                                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
                                                "scheduling.")
