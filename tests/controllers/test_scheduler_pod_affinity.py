"""Pod affinity and anti-affinity through the API: the InterPodAffinity filter and score, end to end.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity`` (``filtering.go``: the three reasons,
affinity UnschedulableAndUnresolvable, anti-affinity Unschedulable; ``scoring.go``), and the preemption
sentence from ``pkg/scheduler/framework/preemption`` / ``defaultpreemption`` (``SelectVictimsOnNode``:
"No preemption victims found for incoming pod" where preemption was tried, "Preemption is not helpful
for scheduling" where the status was UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._nodes import new_node

from ._sim_world import NODES, NS, PODS, World, condition, open_world, pod
from .test_workloads_simulated import DEPLOYMENTS, deployment, events_about, pods_of

HOST = "kubernetes.io/hostname"


def term(labels: dict[str, str], topology_key: str = HOST, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key, **extra}


def anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def affine(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


async def bound(world: World, name: str) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name)).get("spec", {}).get("nodeName") or "")

    return str(await world.eventually(check))


async def unschedulable(world: World, name: str) -> str:
    async def check() -> str:
        cond = condition(await world.get(PODS, name), "PodScheduled")
        return str(cond.get("message") or "") if cond.get("reason") == "Unschedulable" else ""

    return str(await world.eventually(check))


def pinned(node: str) -> dict[str, str]:
    return {HOST: node}


async def test_anti_affine_deployment_puts_one_replica_per_node_and_leaves_the_fourth_pending(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), workloads=True) as world:
        spec = deployment("web", 4)
        spec["spec"]["template"]["spec"]["affinity"] = anti(term({"app": "web"}))
        await world.create(DEPLOYMENTS, spec)

        async def placed() -> list[dict[str, Any]] | None:
            pods = await pods_of(world, "web")
            waiting = [p for p in pods if condition(p, "PodScheduled").get("reason") == "Unschedulable"]
            return pods if len(pods) == 4 and len(waiting) == 1 else None

        pods = await world.eventually(placed)
        nodes = sorted(str(p["spec"].get("nodeName") or "") for p in pods)
        # All four were created in one burst: the three bound ones went to three different nodes (pods
        # assumed in the same burst count), and the fourth has nowhere to go.
        assert nodes == ["", "kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]
        pending = next(p for p in pods if not p["spec"].get("nodeName"))
        message = ("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes "
                   "are available: 3 No preemption victims found for incoming pod.")
        assert condition(pending, "PodScheduled")["message"] == message

        async def recorded() -> bool:
            events = await events_about(world, pending["metadata"]["name"])
            return ("default-scheduler", "FailedScheduling", message) in events

        assert await world.eventually(recorded)
        # A fourth node makes room for it (Node/Add wakes it).
        await world.create(NODES, new_node("kubeloop-node-4", SimulationOptions()))
        assert await bound(world, pending["metadata"]["name"]) == "kubeloop-node-4"


async def test_a_pod_with_required_affinity_waits_for_its_peer_and_joins_its_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await world.create(PODS, pod("cache", labels={"app": "cache"}, affinity=affine(term({"app": "db"}))))
        message = await unschedulable(world, "cache")
        # No pod matches and the pod does not match its own term, so the first-pod rule does not apply;
        # affinity failures are UnschedulableAndUnresolvable: preemption cannot help.
        assert message == ("0/3 nodes are available: 3 node(s) didn't match pod affinity rules. preemption: 0/3 "
                           "nodes are available: 3 Preemption is not helpful for scheduling.")
        await world.create(PODS, pod("db", labels={"app": "db"}, nodeSelector=pinned("kubeloop-node-2")))
        assert await bound(world, "db") == "kubeloop-node-2"
        # The peer's arrival wakes the waiting pod (Pod/Add), and it goes to the peer's node.
        assert await bound(world, "cache") == "kubeloop-node-2"


async def test_the_first_pod_of_a_self_affine_group_schedules_and_the_rest_follow_it(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        group = affine(term({"app": "band"}))
        await world.create(PODS, pod("first", labels={"app": "band"}, affinity=group))
        first = await bound(world, "first")
        for name in ("second", "third"):
            await world.create(PODS, pod(name, labels={"app": "band"}, affinity=group))
            assert await bound(world, name) == first


async def test_an_existing_pods_anti_affinity_keeps_matching_pods_off_its_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await world.create(PODS, pod("loner", labels={"app": "loner"}, nodeSelector=pinned("kubeloop-node-1"),
                                     affinity=anti(term({"app": "web"}))))
        assert await bound(world, "loner") == "kubeloop-node-1"
        await world.create(PODS, pod("web", labels={"app": "web"}, nodeSelector=pinned("kubeloop-node-1")))
        assert await unschedulable(world, "web") == (
            "0/3 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, 2 node(s) didn't "
            "match Pod's node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found "
            "for incoming pod, 2 Preemption is not helpful for scheduling.")
        # Without the node selector, the symmetric rule just steers it elsewhere.
        await world.create(PODS, pod("web-free", labels={"app": "web"}))
        assert await bound(world, "web-free") != "kubeloop-node-1"
        # The loner leaving frees its node (Pod/Delete wakes the waiting pod).
        await world.client.delete(PODS, "loner", namespace=NS, grace_period_seconds=0)
        assert await bound(world, "web") == "kubeloop-node-1"


async def test_anti_affinity_only_counts_pods_in_the_terms_namespaces(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web", labels={"app": "web"}))
        assert await bound(world, "web") == "kubeloop-node-1"
        # The term names another namespace: the web pod in the pod's own namespace does not count.
        await world.create(PODS, pod("elsewhere", labels={"app": "api"},
                                     affinity=anti(term({"app": "web"}, namespaces=["kube-system"]))))
        assert await bound(world, "elsewhere") == "kubeloop-node-1"
        # An empty namespaceSelector means every namespace: now the web pod counts.
        await world.create(PODS, pod("everywhere", labels={"app": "api"},
                                     affinity=anti(term({"app": "web"}, namespaceSelector={}))))
        assert (await unschedulable(world, "everywhere")).startswith(
            "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")


async def test_preferred_anti_affinity_spreads_replicas_before_resources_do(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        # node-1 is the least allocated by far, so without the preference everything would go there.
        for i in range(3):
            await world.create(PODS, pod(f"filler-{i}", labels={"app": "filler"}, cpu="8",
                                         nodeSelector=pinned(f"kubeloop-node-{2 + i % 2}")))
        preferred = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term({"app": "spread"})}]}}
        placed = []
        for i in range(3):
            await world.create(PODS, pod(f"spread-{i}", labels={"app": "spread"}, affinity=preferred))
            placed.append(await bound(world, f"spread-{i}"))
        assert sorted(placed) == ["kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]
