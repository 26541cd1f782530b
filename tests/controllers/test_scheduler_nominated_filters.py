"""Nominated pods in every filter (``RunFilterPluginsWithNominatedPods``, kube-scheduler 1.32): a pending
pod nominated to a node, of equal or higher priority than the pod being scheduled, counts there for
InterPodAffinity and PodTopologySpread as it does for resources; one of lower priority does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeloop.controllers import SimulationOptions

from ._sim_world import NS, PODS, World, condition, open_world
from .test_scheduler_preemption import PRIORITY_CLASSES, priority, priority_classes

NODE1, NODE2 = "kubeloop-node-1", "kubeloop-node-2"
PREFER_NODE1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE1]}]}}]}}


def _pod(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}


async def _nominate_waiting_pod(world: World, klass: str) -> None:
    """A pod of priority class ``klass`` labelled app=db that fits no node (a node selector nothing
    matches), nominated to node-1 as a preemption would have left it."""
    await priority_classes(world)
    await world.create(PODS, _pod("nominee", {"app": "db"}, nodeSelector={"disk": "none"}, **priority(klass)))

    async def unschedulable() -> bool:
        return condition(await world.get(PODS, "nominee"), "PodScheduled").get("reason") == "Unschedulable"

    await world.eventually(unschedulable)
    await world.client.patch(PODS, "nominee", {"status": {"nominatedNodeName": NODE1}}, namespace=NS,
                             subresource="status")

    async def nominated() -> bool:
        return world.sim.scheduler.preemption.nominated.get((NS, "nominee")) is not None

    await world.eventually(nominated)


async def _bound(world: World, name: str) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name))["spec"].get("nodeName") or "")

    return str(await world.eventually(check))


@pytest.mark.parametrize(("klass", "own", "expected"),
                         [("high", "low", NODE2), ("low", "low", NODE2), ("low", "high", NODE1)])
async def test_nominated_pod_counts_for_pod_anti_affinity_when_its_priority_is_not_lower(
        tmp_path: Path, klass: str, own: str, expected: str) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await _nominate_waiting_pod(world, klass)
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        await world.create(PODS, _pod("loner", {"app": "web"}, affinity={**anti, **PREFER_NODE1},
                                      **priority(own)))
        assert await _bound(world, "loner") == expected


@pytest.mark.parametrize(("klass", "own", "expected"),
                         [("high", "low", NODE2), ("low", "low", NODE2), ("low", "high", NODE1)])
async def test_nominated_pod_counts_for_topology_spread_when_its_priority_is_not_lower(
        tmp_path: Path, klass: str, own: str, expected: str) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await _nominate_waiting_pod(world, klass)
        spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"tier": "data"}}}]
        await world.client.patch(PODS, "nominee", {"metadata": {"labels": {"tier": "data"}}}, namespace=NS)
        await world.create(PODS, _pod("spreader", {"tier": "data"}, topologySpreadConstraints=spread,
                                      affinity=PREFER_NODE1, **priority(own)))
        assert await _bound(world, "spreader") == expected


async def test_pod_affinity_must_hold_without_the_nominated_pods_too(tmp_path: Path) -> None:
    # The second pass: with the nominated app=db pod, node-1 satisfies the affinity; without it no node
    # does, and the first-pod exception does not apply (the pod does not match its own term).
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await _nominate_waiting_pod(world, "high")
        affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        await world.create(PODS, _pod("follower", {"app": "web"}, affinity=affinity, **priority("low")))

        async def message() -> str:
            return str(condition(await world.get(PODS, "follower"), "PodScheduled").get("message") or "")

        text = await world.eventually(message)
        assert text.startswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")
        assert not (await world.get(PODS, "follower"))["spec"].get("nodeName")
        assert PRIORITY_CLASSES.plural == "priorityclasses"
