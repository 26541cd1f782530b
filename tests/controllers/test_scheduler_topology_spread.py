"""Topology spread constraints through the API: the PodTopologySpread filter and score, end to end.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread`` (``filtering.go``: skew = matching pods
in the node's domain + 1 - global minimum; the reason and its "(missing required label)" variant,
UnschedulableAndUnresolvable; ``common.go``: nodeAffinityPolicy Honor / nodeTaintsPolicy Ignore by
default, matchLabelKeys; ``scoring.go`` and the default profile's System defaulting).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NODES, NS, PODS, World, open_world, pod
from .test_scheduler_pod_affinity import bound, unschedulable
from .test_workloads_simulated import DEPLOYMENTS, deployment, pods_of

SERVICES = builtin("", "services")
REPLICATIONCONTROLLERS = builtin("", "replicationcontrollers")
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def spread(key: str, labels: dict[str, str], *, max_skew: int = 1, when: str = "DoNotSchedule",
           **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": labels}, **extra}


async def zoned(world: World, zones: dict[str, str]) -> None:
    """Label the nodes with zones and wait until the scheduler's node cache has the labels."""
    for node, zone in zones.items():
        await world.client.patch(NODES, node, {"metadata": {"labels": {ZONE: zone}}})
    cache = world.manager.informer(NODES).cache

    async def labelled() -> bool:
        return all(((cache.get_by_name(node, None) or {}).get("metadata") or {}).get("labels", {}).get(ZONE) == zone
                   for node, zone in zones.items())

    await world.eventually(labelled)


async def _true_if(value: bool) -> bool:
    return value


async def zones_of(world: World, app: str) -> dict[str, int]:
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE)
             for n in (await world.client.list(NODES)).get("items") or ()}
    counts: dict[str, int] = {}
    for p in await pods_of(world, app):
        zone = nodes.get(p["spec"].get("nodeName") or "")
        if zone:
            counts[zone] = counts.get(zone, 0) + 1
    return counts


async def test_a_deployment_spreads_evenly_across_zones_of_unequal_size(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), workloads=True) as world:
        await zoned(world, {"kubeloop-node-1": "a", "kubeloop-node-2": "a", "kubeloop-node-3": "b"})
        spec = deployment("web", 4)
        spec["spec"]["template"]["spec"]["topologySpreadConstraints"] = [spread(ZONE, {"app": "web"})]
        await world.create(DEPLOYMENTS, spec)

        async def placed() -> dict[str, int] | None:
            counts = await zones_of(world, "web")
            return counts if sum(counts.values()) == 4 else None

        # Resources alone would put 3 in zone a (two nodes) and 1 in b; maxSkew 1 makes it 2 and 2.
        assert await world.eventually(placed) == {"a": 2, "b": 2}


async def test_skew_beyond_max_keeps_a_pod_pending_until_the_other_domain_catches_up(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await zoned(world, {"kubeloop-node-1": "a", "kubeloop-node-2": "b"})
        await world.create(PODS, pod("one", labels={"app": "db"}, nodeSelector={HOST: "kubeloop-node-1"}))
        assert await bound(world, "one") == "kubeloop-node-1"
        constrained = pod("two", labels={"app": "db"}, nodeSelector={HOST: "kubeloop-node-1"},
                          topologySpreadConstraints=[spread(ZONE, {"app": "db"})])
        # nodeAffinityPolicy Honor: only zone a counts as a domain for this pod, so its minimum is 1 and a
        # second pod there is within skew. Ignore counts zone b (empty): skew 2 > 1.
        constrained["spec"]["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = "Ignore"
        await world.create(PODS, constrained)
        assert await unschedulable(world, "two") == (
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't match "
            "pod topology spread constraints. preemption: 0/2 nodes are available: 1 No preemption victims found "
            "for incoming pod, 1 Preemption is not helpful for scheduling.")
        # A matching pod arriving in zone b lowers the skew (Pod/Add wakes the waiting pod).
        await world.create(PODS, pod("three", labels={"app": "db"}, nodeSelector={HOST: "kubeloop-node-2"}))
        assert await bound(world, "three") == "kubeloop-node-2"
        assert await bound(world, "two") == "kubeloop-node-1"
        honoured = pod("four", labels={"app": "db"}, nodeSelector={HOST: "kubeloop-node-1"},
                       topologySpreadConstraints=[spread(ZONE, {"app": "db"})])
        await world.create(PODS, honoured)
        assert await bound(world, "four") == "kubeloop-node-1"


async def test_a_node_without_the_topology_label_is_unresolvable(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await world.create(PODS, pod("racked", topologySpreadConstraints=[spread("rack", {"app": "web"})]))
        assert await unschedulable(world, "racked") == (
            "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints (missing required "
            "label). preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
        await world.client.patch(NODES, "kubeloop-node-2", {"metadata": {"labels": {"rack": "r1"}}})
        assert await bound(world, "racked") == "kubeloop-node-2"


async def test_min_domains_treats_missing_domains_as_empty(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await zoned(world, {"kubeloop-node-1": "a", "kubeloop-node-2": "b"})
        constraint = spread(ZONE, {"app": "web"}, minDomains=3)
        placed = []
        for i in range(3):
            await world.create(PODS, pod(f"w{i}", topologySpreadConstraints=[constraint]))
            if i < 2:
                placed.append(await bound(world, f"w{i}"))
        # Two domains exist and three are asked for: the global minimum is 0, so each zone takes one pod
        # (skew 1) and a second pod in either would make it 2.
        assert sorted(placed) == ["kubeloop-node-1", "kubeloop-node-2"]
        assert (await unschedulable(world, "w2")).startswith(
            "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints.")


async def test_match_label_keys_count_only_pods_of_the_same_revision(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await zoned(world, {"kubeloop-node-1": "a", "kubeloop-node-2": "b"})
        for name in ("old-1", "old-2"):
            await world.create(PODS, pod(name, labels={"app": "web", "rev": "1"}, nodeSelector={HOST: "kubeloop-node-1"}))
            assert await bound(world, name) == "kubeloop-node-1"
        # nodeAffinityPolicy Ignore: both zones are domains although the pod may only go to zone a.
        by_revision = spread(ZONE, {"app": "web"}, matchLabelKeys=["rev"], nodeAffinityPolicy="Ignore")
        await world.create(PODS, pod("new", labels={"app": "web", "rev": "2"}, nodeSelector={HOST: "kubeloop-node-1"},
                                     topologySpreadConstraints=[by_revision]))
        # Only rev=2 pods count: zone a holds none, so the skew is 1.
        assert await bound(world, "new") == "kubeloop-node-1"
        # Without matchLabelKeys the three pods in zone a count: skew 4.
        every_revision = spread(ZONE, {"app": "web"}, nodeAffinityPolicy="Ignore")
        await world.create(PODS, pod("any", labels={"app": "web", "rev": "3"}, nodeSelector={HOST: "kubeloop-node-1"},
                                     topologySpreadConstraints=[every_revision]))
        assert "1 node(s) didn't match pod topology spread constraints" in await unschedulable(world, "any")


async def test_schedule_anyway_prefers_the_emptier_domain_but_never_blocks(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        await zoned(world, {"kubeloop-node-1": "a", "kubeloop-node-2": "a", "kubeloop-node-3": "b"})
        soft = [spread(ZONE, {"app": "soft"}, when="ScheduleAnyway")]
        zones = []
        for i in range(4):
            await world.create(PODS, pod(f"s{i}", labels={"app": "soft"}, topologySpreadConstraints=soft))
            zones.append(await bound(world, f"s{i}"))
        counts = {"a": sum(z != "kubeloop-node-3" for z in zones), "b": sum(z == "kubeloop-node-3" for z in zones)}
        assert counts == {"a": 2, "b": 2}
        # Only a zone-b-less node is allowed: the soft constraint does not stop it.
        await world.create(PODS, pod("pinned", labels={"app": "soft"}, topologySpreadConstraints=soft,
                                     nodeSelector={HOST: "kubeloop-node-1"}))
        assert await bound(world, "pinned") == "kubeloop-node-1"


async def test_system_default_spreading_spreads_a_replica_set_against_resource_scores(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3), workloads=True) as world:
        # node-1 is the least allocated, so LeastAllocated alone would put every replica there.
        for i in range(3):
            await world.create(PODS, pod(f"filler-{i}", labels={"app": "filler"}, cpu="8",
                                         nodeSelector={HOST: f"kubeloop-node-{2 + i % 2}"}))
            await bound(world, f"filler-{i}")
        # No constraints of its own: the default profile's System constraints (hostname maxSkew 3, zone
        # maxSkew 5, ScheduleAnyway) apply with the ReplicaSet's selector, weight 2.
        await world.create(DEPLOYMENTS, deployment("web", 3))

        async def placed() -> list[str] | None:
            nodes = [str(p["spec"].get("nodeName") or "") for p in await pods_of(world, "web")]
            return sorted(nodes) if len(nodes) == 3 and all(nodes) else None

        assert await world.eventually(placed) == ["kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]
        # Bare pods are spread the same way when a Service selects them (helper.DefaultSelector).
        await world.create(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
                                      "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]}})
        cache = world.manager.informer(SERVICES).cache
        await world.eventually(lambda: _true_if(cache.get_by_name("api", NS) is not None))
        placed_api = []
        for i in range(3):
            await world.create(PODS, pod(f"api-{i}", labels={"app": "api"}))
            placed_api.append(await bound(world, f"api-{i}"))
        assert sorted(placed_api) == ["kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]


async def test_system_default_spreading_uses_a_replication_controllers_label_map(tmp_path: Path) -> None:
    """helper.DefaultSelector merges the controlling RC's ``spec.selector`` (a label map) into the selector."""
    async with open_world(tmp_path, SimulationOptions(nodes=3), controllers=("replicationcontroller",)) as world:
        for i in range(3):
            await world.create(PODS, pod(f"filler-{i}", labels={"app": "filler"}, cpu="8",
                                         nodeSelector={HOST: f"kubeloop-node-{2 + i % 2}"}))
            await bound(world, f"filler-{i}")
        await world.create(REPLICATIONCONTROLLERS, {
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
            "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "legacy"}},
                                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}})

        async def placed() -> list[str] | None:
            nodes = [str(p["spec"].get("nodeName") or "") for p in await pods_of(world, "legacy")]
            return sorted(nodes) if len(nodes) == 3 and all(nodes) else None

        assert await world.eventually(placed) == ["kubeloop-node-1", "kubeloop-node-2", "kubeloop-node-3"]


async def test_prefer_no_schedule_taints_steer_pods_to_untainted_nodes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        for name in ("kubeloop-node-1", "kubeloop-node-2"):
            await world.client.patch(NODES, name, {"spec": {"taints": [
                {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]}})
        cache = world.manager.informer(NODES).cache

        async def tainted() -> bool:
            node = cache.get_by_name("kubeloop-node-2", None) or {}
            return bool((node.get("spec") or {}).get("taints"))

        await world.eventually(tainted)
        await world.create(PODS, pod("careful"))
        assert await bound(world, "careful") == "kubeloop-node-3"
        # A pod tolerating the taint weighs the nodes alike again: a preferred node affinity of weight 1
        # for node-1 (NodeAffinity 100 x 2) now wins, where the taint (TaintToleration 100 x 3 for node-3)
        # would have outweighed it. Equal totals would be picked at random (selectHost), and node-3
        # may already list the pod's image (ImageLocality), so the preference decides here.
        prefer_node1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kubeloop-node-1"]}]}}]}}
        await world.create(PODS, pod("relaxed", tolerations=[{"key": "spot", "operator": "Exists"}],
                                     affinity=prefer_node1))
        assert await bound(world, "relaxed") == "kubeloop-node-1"
