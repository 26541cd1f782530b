"""The node lifecycle controller on simulated nodes (upstream ``pkg/controller/nodelifecycle``) and the
taint-based eviction that follows (``pkg/controller/tainteviction``), all on the fake clock.

A node's kubelet is stopped with the node annotation ``kubeloop.dev/fault: kubelet-stopped``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import format_micro_time, format_time, parse_time
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import LEASES
from kubeloop.testing import resource

from ._sim_world import NODES, NS, PODS, World, condition, open_world, pod

EVENTS = resource("", "Event")
FAULT = "kubeloop.dev/fault"
NODE = "kubeloop-node-1"
ON_NODE_1 = {"kubernetes.io/hostname": NODE}
UNKNOWN = {"status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}


async def _stop_kubelet(world: World, node: str = NODE) -> float:
    """Stop the node's kubelet; return its last heartbeat (the Lease's renewTime)."""
    await world.client.patch(NODES, node, {"metadata": {"annotations": {FAULT: "kubelet-stopped"}}})
    await world.settle()
    lease = await world.get(LEASES, node, "kube-node-lease")
    return parse_time(lease["spec"]["renewTime"])


async def _start_kubelet(world: World, node: str = NODE) -> None:
    await world.client.patch(NODES, node, {"metadata": {"annotations": {FAULT: None}}})


async def _node_when(world: World, check: Any, node: str = NODE) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        obj = await world.get(NODES, node, None)
        return obj if check(obj) else None

    result: dict[str, Any] = await world.eventually(probe)
    return result


async def _pod_when(world: World, name: str, check: Any) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        obj = await world.maybe(PODS, name)
        return obj if obj is not None and check(obj) else None

    result: dict[str, Any] = await world.eventually(probe)
    return result


def _taints(node: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    # A node created without a spec has none until the lifecycle controller's first taint.
    return {(t["key"], t["effect"]): t.get("timeAdded") for t in (node.get("spec") or {}).get("taints") or ()}


def _ready(obj: dict[str, Any]) -> bool:
    return condition(obj, "Ready").get("status") == "True"


async def _events(world: World, namespace: str, kind: str, name: str) -> list[tuple[str, str, str, str]]:
    items = (await world.client.list(EVENTS, namespace=namespace)).get("items") or []
    return [(e["type"], e["reason"], e["source"]["component"], e["message"]) for e in items
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name]


async def test_stopped_kubelet_makes_the_node_unknown_after_the_50s_node_monitor_grace_period(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        before = await world.get(NODES, NODE, None)
        last_beat = await _stop_kubelet(world)
        await world.advance(last_beat + 49 - world.clock.now())
        assert _ready(await world.get(NODES, NODE, None))
        # The kubelet is down: its Lease is no longer renewed.
        lease = await world.get(LEASES, NODE, "kube-node-lease")
        assert parse_time(lease["spec"]["renewTime"]) == last_beat
        await world.advance(1)
        node = await _node_when(world, lambda n: condition(n, "Ready").get("status") == "Unknown")
        stamp = format_time(last_beat + 50)
        for type_ in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            got = condition(node, type_)
            assert {k: got[k] for k in UNKNOWN} == UNKNOWN, type_
            assert got["lastTransitionTime"] == stamp
            # lastHeartbeatTime stays the kubelet's last one (upstream: "the last time we heard from kubelet").
            assert got["lastHeartbeatTime"] == condition(before, type_)["lastHeartbeatTime"]
        node = await _node_when(world, lambda n: len(_taints(n)) == 2)
        # SwapNodeControllerTaint stamps timeAdded on every taint it adds, NoSchedule ones included.
        assert _taints(node) == {("node.kubernetes.io/unreachable", "NoSchedule"): stamp,
                                 ("node.kubernetes.io/unreachable", "NoExecute"): stamp}
        await world.settle()
        assert ("Normal", "NodeNotReady", "node-controller", f"Node {NODE} status is now: NodeNotReady") in (
            await _events(world, "default", "Node", NODE))
        # Declared Unknown once: nothing more is written while the kubelet stays down.
        assert await world.quiet_writes() == 0


async def test_pods_on_an_unreachable_node_go_unready_then_are_evicted_after_the_300s_default_toleration(
        tmp_path: Path) -> None:  # fmt: skip
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=30))
        await world.create(PODS, pod("forever", nodeSelector=ON_NODE_1, tolerations=[
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]))
        await world.create(PODS, pod("brief", nodeSelector=ON_NODE_1, tolerations=[
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 20}]))
        for name in ("web", "forever", "brief"):
            await _pod_when(world, name, _ready)
        web = await world.get(PODS, "web")
        # DefaultTolerationSeconds admission gave "web" its 300 s tolerations.
        assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300} in web["spec"]["tolerations"]
        last_beat = await _stop_kubelet(world)
        await world.advance(last_beat + 50 - world.clock.now())
        unknown_at = last_beat + 50
        await _node_when(world, lambda n: ("node.kubernetes.io/unreachable", "NoExecute") in _taints(n))
        # MarkPodsNotReady: the Ready condition only; the containers' statuses are the (stopped) kubelet's.
        web = await _pod_when(world, "web", lambda p: not _ready(p))
        assert condition(web, "Ready")["lastTransitionTime"] == format_time(unknown_at)
        assert condition(web, "ContainersReady")["status"] == "True"
        await world.settle()
        assert ("Warning", "NodeNotReady", "node-controller", "Node is not ready") in (
            await _events(world, NS, "Pod", "web"))
        # tolerationSeconds 20: evicted 20 s after the taint; Terminating, since no kubelet stops it.
        await world.advance(20)
        brief = await _pod_when(world, "brief", lambda p: p["metadata"].get("deletionTimestamp"))
        assert condition(brief, "DisruptionTarget") == {**condition(brief, "DisruptionTarget"), "status": "True",
                                                        "reason": "DeletionByTaintManager",
                                                        "message": "Taint manager: deleting due to NoExecute taint"}
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")
        await world.advance(279)
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")
        await world.advance(1)
        web = await _pod_when(world, "web", lambda p: p["metadata"].get("deletionTimestamp"))
        assert parse_time(web["metadata"]["deletionTimestamp"]) == unknown_at + 300 + 30
        await world.settle()
        assert ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Marking for deletion Pod ns/web") in (
            await _events(world, NS, "Pod", "web"))
        # Past its grace period the pod is still there: only a kubelet removes a Terminating pod.
        await world.advance(60)
        assert await world.maybe(PODS, "web") is not None
        forever = await world.get(PODS, "forever")
        assert not forever["metadata"].get("deletionTimestamp")

        # The kubelet comes back: it posts Ready, the taints go, the Terminating pods are finished.
        await _start_kubelet(world)
        node = await _node_when(world, lambda n: _ready(n) and not _taints(n))
        assert condition(node, "Ready")["reason"] == "KubeletReady"
        assert condition(node, "MemoryPressure")["status"] == "False"

        async def gone() -> bool:
            return await world.maybe(PODS, "web") is None and await world.maybe(PODS, "brief") is None

        await world.eventually(gone)
        await _pod_when(world, "forever", _ready)


async def test_when_no_node_is_ready_nothing_is_tainted_no_execute_or_evicted(tmp_path: Path) -> None:
    # handleDisruption: every zone fully disrupted ("master disruption mode") stops evictions.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))
        await _pod_when(world, "web", _ready)
        last_beat = await _stop_kubelet(world)
        await world.advance(last_beat + 50 - world.clock.now())
        node = await _node_when(world, lambda n: condition(n, "Ready").get("status") == "Unknown" and _taints(n))
        assert set(_taints(node)) == {("node.kubernetes.io/unreachable", "NoSchedule")}
        await world.advance(600)
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")


async def test_no_execute_taint_swaps_from_not_ready_to_unreachable_and_pods_count_from_the_first(
        tmp_path: Path) -> None:  # fmt: skip
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=0))
        await _pod_when(world, "web", _ready)
        await world.client.patch(NODES, NODE, {"metadata": {"annotations": {FAULT: "not-ready"}}})
        node = await _node_when(world, lambda n: ("node.kubernetes.io/not-ready", "NoExecute") in _taints(n))
        tainted_at = parse_time(_taints(node)[("node.kubernetes.io/not-ready", "NoExecute")] or "")
        await world.client.patch(NODES, NODE, {"metadata": {"annotations": {FAULT: "kubelet-stopped"}}})
        await world.advance(60)
        node = await _node_when(world, lambda n: ("node.kubernetes.io/unreachable", "NoExecute") in _taints(n))
        assert set(_taints(node)) == {("node.kubernetes.io/unreachable", "NoSchedule"),
                                      ("node.kubernetes.io/unreachable", "NoExecute")}
        # The Ready heartbeat stopped with the kubelet, the Lease too: Unknown 50 s after the last one.
        assert condition(node, "Ready")["status"] == "Unknown"
        await world.advance(tainted_at + 300 - world.clock.now() - 1)
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")
        await world.advance(1)

        async def evicted() -> bool:  # terminationGracePeriodSeconds 0: the delete is immediate
            return await world.maybe(PODS, "web") is None

        await world.eventually(evicted)


async def test_a_running_kubelet_stays_ready_across_a_large_fake_clock_jump(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web"))
        await _pod_when(world, "web", _ready)
        await world.advance(3600)
        await world.settle()
        for name in ("kubeloop-node-1", "kubeloop-node-2"):
            node = await world.get(NODES, name, None)
            assert _ready(node) and not _taints(node)
        assert _ready(await world.get(PODS, "web"))


async def test_cordon_taints_the_node_unschedulable_and_uncordon_removes_it(tmp_path: Path) -> None:
    # doNoScheduleTaintingPass: spec.unschedulable -> node.kubernetes.io/unschedulable:NoSchedule.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.client.patch(NODES, NODE, {"spec": {"unschedulable": True}})
        node = await _node_when(world, lambda n: _taints(n))
        assert _taints(node) == {("node.kubernetes.io/unschedulable", "NoSchedule"): format_time(world.clock.now())}
        await world.create(PODS, pod("web"))
        web = await _pod_when(world, "web", lambda p: p["spec"].get("nodeName"))
        assert web["spec"]["nodeName"] == "kubeloop-node-2"
        # A taint of the user's own is kept as it is.
        own = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
        await world.client.patch(NODES, NODE, {"spec": {"unschedulable": None, "taints": [*node["spec"]["taints"], own]}})
        node = await _node_when(world, lambda n: set(_taints(n)) == {("dedicated", "NoSchedule")})
        assert node["spec"]["taints"] == [own]


def _never_posted(name: str) -> dict[str, Any]:
    """A simulated node whose kubelet is stopped from the start: it never posts a status."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": {
        "kubeloop.dev/simulated": "true", FAULT: "kubelet-stopped"}}}


async def test_a_node_that_never_posted_status_is_unknown_60s_after_its_creation(tmp_path: Path) -> None:
    # tryUpdateNodeHealth without a Ready condition: --node-startup-grace-period from creationTimestamp.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        created = await world.create(NODES, _never_posted("silent"))
        created_at = parse_time(created["metadata"]["creationTimestamp"])
        await world.advance(created_at + 59 - world.clock.now())
        assert not condition(await world.get(NODES, "silent", None), "Ready")
        await world.advance(1)
        node = await _node_when(world, lambda n: condition(n, "Ready").get("status") == "Unknown", "silent")
        for type_ in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            assert condition(node, type_) == {
                "type": type_, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                "message": "Kubelet never posted node status.", "lastHeartbeatTime": created["metadata"]["creationTimestamp"],
                "lastTransitionTime": format_time(created_at + 60)}, type_
        # Another node is Ready, so the unreachable NoExecute taint goes on too.
        node = await _node_when(world, lambda n: len(_taints(n)) == 2, "silent")
        assert set(_taints(node)) == {("node.kubernetes.io/unreachable", "NoSchedule"),
                                      ("node.kubernetes.io/unreachable", "NoExecute")}


async def test_a_lease_renewed_before_any_status_restarts_the_startup_grace_period(tmp_path: Path) -> None:
    # The Lease's renewTime moving sets the probe timestamp to now, Ready condition or not.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        created = await world.create(NODES, _never_posted("silent"))
        created_at = parse_time(created["metadata"]["creationTimestamp"])
        await world.advance(40)
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "silent", "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": "silent", "renewTime": format_micro_time(world.clock.now())}}
        await world.client.create(LEASES, lease, namespace="kube-node-lease")
        await world.settle()  # seen at created + 40: the startup grace period now ends at created + 100
        await world.advance(created_at + 60 - world.clock.now())
        await world.settle()
        assert not condition(await world.get(NODES, "silent", None), "Ready")
        await world.advance(created_at + 100 - world.clock.now())
        await _node_when(world, lambda n: condition(n, "Ready").get("reason") == "NodeStatusNeverUpdated", "silent")


async def test_a_node_back_before_the_toleration_runs_out_cancels_the_eviction_with_an_event(tmp_path: Path) -> None:
    # cancelWorkWithEvent: the scheduled eviction is dropped when the NoExecute taints go.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1))
        await world.create(PODS, pod("forever", nodeSelector=ON_NODE_1, tolerations=[
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]))
        for name in ("web", "forever"):
            await _pod_when(world, name, _ready)
        last_beat = await _stop_kubelet(world)
        await world.advance(last_beat + 50 - world.clock.now())
        await _node_when(world, lambda n: ("node.kubernetes.io/unreachable", "NoExecute") in _taints(n))
        await world.advance(100)
        await _start_kubelet(world)
        await _node_when(world, lambda n: _ready(n) and not _taints(n))
        await _pod_when(world, "web", _ready)
        cancel = ("Normal", "TaintManagerEviction", "taint-eviction-controller", "Cancelling deletion of Pod ns/web")

        async def cancelled() -> bool:  # Events are written in the background: poll, bounded in loop turns
            return cancel in await _events(world, NS, "Pod", "web")

        await world.eventually(cancelled)
        # Tolerated for ever: nothing was scheduled, so nothing is cancelled.
        assert not [e for e in await _events(world, NS, "Pod", "forever") if e[1] == "TaintManagerEviction"]
        # And nothing is evicted later.
        await world.advance(600)
        assert not (await world.get(PODS, "web"))["metadata"].get("deletionTimestamp")


async def test_a_not_ready_kubelet_gets_no_node_not_ready_event_from_the_node_controller(tmp_path: Path) -> None:
    # monitorNodeHealth records NodeNotReady only when its own update turned Ready over; a Ready False
    # the kubelet posts is the kubelet's to report.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.client.patch(NODES, NODE, {"metadata": {"annotations": {FAULT: "not-ready"}}})
        await _node_when(world, lambda n: ("node.kubernetes.io/not-ready", "NoExecute") in _taints(n))
        await world.settle()
        assert not [e for e in await _events(world, "default", "Node", NODE) if e[2] == "node-controller"]


async def test_a_no_execute_taint_a_pod_does_not_tolerate_evicts_it_at_once(tmp_path: Path) -> None:
    # Any NoExecute taint, not only the lifecycle controller's: an untolerated one leaves no time
    # (getMinTolerationTime of no matching toleration is 0); tolerated with no tolerationSeconds, never.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, pod("web", nodeSelector=ON_NODE_1, terminationGracePeriodSeconds=0))
        await world.create(PODS, pod("tolerant", nodeSelector=ON_NODE_1, tolerations=[
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]))
        for name in ("web", "tolerant"):
            await _pod_when(world, name, _ready)
        await world.client.patch(NODES, NODE, {"spec": {"taints": [
            {"key": "dedicated", "value": "db", "effect": "NoExecute"}]}})

        async def evicted() -> bool:
            return await world.maybe(PODS, "web") is None

        await world.eventually(evicted)
        await world.advance(600)
        tolerant = await world.get(PODS, "tolerant")
        assert not tolerant["metadata"].get("deletionTimestamp") and _ready(tolerant)
        assert _taints(await world.get(NODES, NODE, None)) == {("dedicated", "NoExecute"): None}
