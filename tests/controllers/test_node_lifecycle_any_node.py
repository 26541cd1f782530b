"""The node lifecycle and taint-eviction controllers on Nodes the simulated kubelet does not run: a Node
applied by hand (no kubelet at all) and a Node whose status and Lease the test posts, as another kubelet
(a virtual kubelet, a harness) would. All on the fake clock, through the HTTP API.

Upstream judges every node the same way (``pkg/controller/nodelifecycle/node_lifecycle_controller.go``
``monitorNodeHealth`` / ``tryUpdateNodeHealth``): without a Ready condition the node has
``--node-startup-grace-period`` (60 s) from its creation, then Ready, MemoryPressure, DiskPressure and
PIDPressure go ``Unknown`` ``NodeStatusNeverUpdated``; with one, ``--node-monitor-grace-period`` (50 s in
1.32, kubernetes/kubernetes#126287) from the last heartbeat seen (the Ready condition's
``lastHeartbeatTime`` or the Lease's ``renewTime`` moving), then ``NodeStatusUnknown``. The taints follow
(``doNoScheduleTaintingPass``, ``processTaintBaseEviction``), pods are marked not ready
(``MarkPodsNotReady``) and the taint-eviction controller (``pkg/controller/tainteviction``) deletes them
once their tolerations (300 s from DefaultTolerationSeconds) run out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import format_micro_time, format_time, parse_time
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import LEASES

from ..server._uvicorn import Kubectl, serve, write_kubeconfig
from ._sim_world import NODES, NS, PODS, World, condition, open_world
from .test_node_lifecycle import _events, _node_when, _pod_when, _ready, _taints

UNREACHABLE_NO_EXECUTE = ("node.kubernetes.io/unreachable", "NoExecute")
UNREACHABLE_BOTH = {("node.kubernetes.io/unreachable", "NoSchedule"), UNREACHABLE_NO_EXECUTE}
HEALTH = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def _bare_node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": name}}}


async def _post_status(world: World, name: str, ready: str = "True") -> dict[str, Any]:
    """What a kubelet's status post does: every health condition with a fresh heartbeat."""
    node = await world.get(NODES, name, None)
    stamp = format_time(world.clock.now())
    old = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or ()}

    def posted(type_: str, status: str, reason: str) -> dict[str, Any]:
        moved = (old.get(type_) or {}).get("status") != status
        since = stamp if moved else old[type_]["lastTransitionTime"]
        return {"type": type_, "status": status, "reason": reason, "message": "posted by the test's kubelet",
                "lastHeartbeatTime": stamp, "lastTransitionTime": since}

    conditions = [posted("Ready", ready, "KubeletReady"),
                  *(posted(t, "False", "KubeletHasSufficient") for t in HEALTH[1:])]
    status = {**(node.get("status") or {}), "conditions": conditions}
    updated: dict[str, Any] = await world.client.update(NODES, {**node, "status": status}, subresource="status")
    return updated


async def _renew_lease(world: World, name: str) -> None:
    lease = await world.cluster.get_or_none(LEASES, name, "kube-node-lease")
    spec = {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": format_micro_time(world.clock.now())}
    if lease is None:
        await world.client.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                           "metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": spec},
                                  namespace="kube-node-lease")
    else:
        await world.client.update(LEASES, {**lease, "spec": spec}, namespace="kube-node-lease")
    await world.settle()


async def test_a_node_without_a_kubelet_is_unknown_60s_after_its_creation_and_tainted_unreachable(
        tmp_path: Path) -> None:  # fmt: skip
    # tryUpdateNodeHealth: no Ready condition -> nodeStartupGracePeriod from creationTimestamp.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        created = await world.create(NODES, _bare_node("bare"))
        created_at = parse_time(created["metadata"]["creationTimestamp"])
        await world.advance(created_at + 59 - world.clock.now())
        await world.settle()
        node = await world.get(NODES, "bare", None)
        assert not (node.get("status") or {}).get("conditions") and not _taints(node)
        await world.advance(1)
        node = await _node_when(world, lambda n: set(_taints(n)) == UNREACHABLE_BOTH, "bare")
        for type_ in HEALTH:
            assert condition(node, type_) == {
                "type": type_, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                "message": "Kubelet never posted node status.",
                "lastHeartbeatTime": created["metadata"]["creationTimestamp"],
                "lastTransitionTime": format_time(created_at + 60)}, type_
        assert not condition(node, "NetworkUnavailable")  # managed at the control-plane level, left alone
        assert set(_taints(node).values()) == {format_time(created_at + 60)}
        # Never Ready, so no "status is now: NodeNotReady" Event (upstream records the Ready -> not Ready change).
        assert await _events(world, "default", "Node", "bare") == []


async def test_a_node_whose_own_kubelet_stops_heartbeating_goes_unknown_and_its_pods_are_evicted_after_300s(
        tmp_path: Path) -> None:  # fmt: skip
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(NODES, _bare_node("vk"))
        await _post_status(world, "vk")
        await _renew_lease(world, "vk")
        web = await world.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {
            "nodeName": "vk", "containers": [{"name": "app", "image": "nginx:1.25"}]}})
        # DefaultTolerationSeconds admission gave it 300 s for unreachable and not-ready.
        assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300} in web["spec"]["tolerations"]
        stamp = format_time(world.clock.now())
        await world.client.update(PODS, {**web, "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": stamp}]}}, namespace=NS, subresource="status")
        started = world.clock.now()
        # The Lease alone is a heartbeat: renewed at +30, the node is still Ready at +70.
        await world.advance(30)
        await _renew_lease(world, "vk")
        last_beat = world.clock.now()
        await world.advance(40)
        await world.settle()
        assert _ready(await world.get(NODES, "vk", None)) and _ready(await world.get(PODS, "web"))
        assert world.clock.now() == started + 70
        await world.advance(last_beat + 50 - world.clock.now())
        unknown_at = last_beat + 50
        node = await _node_when(world, lambda n: set(_taints(n)) == UNREACHABLE_BOTH, "vk")
        ready = condition(node, "Ready")
        assert ready == {**ready, "status": "Unknown", "reason": "NodeStatusUnknown",
                         "message": "Kubelet stopped posting node status.",
                         "lastHeartbeatTime": format_time(started), "lastTransitionTime": format_time(unknown_at)}
        for type_ in HEALTH[1:]:
            assert condition(node, type_)["status"] == "Unknown", type_
        await world.settle()
        assert ("Normal", "NodeNotReady", "node-controller", "Node vk status is now: NodeNotReady") in (
            await _events(world, "default", "Node", "vk"))
        # MarkPodsNotReady, with its Event.
        pod = await _pod_when(world, "web", lambda p: not _ready(p))
        assert condition(pod, "Ready")["lastTransitionTime"] == format_time(unknown_at)
        assert ("Warning", "NodeNotReady", "node-controller", "Node is not ready") in (
            await _events(world, NS, "Pod", "web"))
        # The taint-eviction controller: 300 s after it saw the unreachable taint.
        await world.advance(299)
        await world.settle()
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")
        await world.advance(1)
        pod = await _pod_when(world, "web", lambda p: p["metadata"].get("deletionTimestamp"))
        assert condition(pod, "DisruptionTarget")["reason"] == "DeletionByTaintManager"
        await world.settle()
        assert ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Marking for deletion Pod ns/web") in (
            await _events(world, NS, "Pod", "web"))
        # No kubelet finishes it: it stays Terminating, as on an unreachable node upstream.
        await world.advance(60)
        assert await world.maybe(PODS, "web") is not None
        # Its kubelet comes back and posts Ready: the condition taints go.
        await _post_status(world, "vk")
        node = await _node_when(world, lambda n: not _taints(n), "vk")
        assert _ready(node)


async def test_a_node_posting_ready_false_is_tainted_not_ready_and_keeps_its_reason(tmp_path: Path) -> None:
    # Ready False is the kubelet's own word: the controller taints it not-ready (NoSchedule and NoExecute)
    # and does not turn it Unknown while heartbeats keep coming.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(NODES, _bare_node("sick"))
        await _post_status(world, "sick", ready="False")
        node = await _node_when(world, lambda n: len(_taints(n)) == 2, "sick")
        assert set(_taints(node)) == {("node.kubernetes.io/not-ready", "NoSchedule"),
                                      ("node.kubernetes.io/not-ready", "NoExecute")}
        for _ in range(3):
            await world.advance(40)
            await _post_status(world, "sick", ready="False")
        await world.settle()
        node = await world.get(NODES, "sick", None)
        assert condition(node, "Ready")["status"] == "False"
        assert condition(node, "Ready")["reason"] == "KubeletReady"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_shows_a_node_it_applied_not_ready_once_the_startup_grace_period_passes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        manifest = tmp_path / "node.json"
        manifest.write_text(json.dumps(_bare_node("applied")))
        async with serve(world.cluster.app) as url:
            kubeconfig = tmp_path / "kubeconfig"
            write_kubeconfig(kubeconfig, url)
            kubectl = Kubectl(kubeconfig)
            _, out, _ = await kubectl.run("apply", "-f", str(manifest))
            assert out.strip() == "node/applied created"
            _, shown, _ = await kubectl.run("get", "node", "applied", "--no-headers")
            assert shown.split()[:2] == ["applied", "Unknown"]  # no Ready condition yet: printNode's "Unknown"
            await world.advance(60)

            async def not_ready() -> list[str] | None:
                _, table, _ = await kubectl.run("get", "node", "applied", "--no-headers")
                return table.split() if table.split()[1:2] == ["NotReady"] else None

            assert (await world.eventually(not_ready))[:2] == ["applied", "NotReady"]
            _, reason, _ = await kubectl.run("get", "node", "applied", "-o",
                                             "jsonpath={.status.conditions[?(@.type=='Ready')].reason}")
            assert reason == "NodeStatusNeverUpdated"
            _, taints, _ = await kubectl.run("get", "node", "applied", "-o", "jsonpath={.spec.taints[*].effect}")
            assert sorted(taints.split()) == ["NoExecute", "NoSchedule"]
