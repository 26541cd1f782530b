"""The node lifecycle controller: health from heartbeats, condition taints, pods not ready, for every Node.

Mirrors kube-controller-manager's ``nodelifecycle`` controller (``pkg/controller/nodelifecycle``,
``monitorNodeHealth``), which judges every Node, whoever runs its kubelet: the simulated kubelet
(:mod:`._nodes`), a virtual kubelet, a test harness, or nobody (a Node applied by hand). All go
through one code path; the one thing the simulation adds is below (a running simulated kubelet):

- **Health** (``tryUpdateNodeHealth``): the controller remembers, per node, when it last saw the
  kubelet's heartbeat move (the Lease ``kube-node-lease/<node>``'s ``renewTime`` or the Ready
  condition's ``lastHeartbeatTime``), on its own clock, counting from when it first saw the node.
  When ``grace_period`` (50 s, kube-controller-manager 1.32's ``--node-monitor-grace-period``) has
  passed without one, Ready, MemoryPressure, DiskPressure and PIDPressure become ``Unknown``, reason
  ``NodeStatusUnknown``, message ``Kubelet stopped posting node status.`` (``lastTransitionTime``
  now, ``lastHeartbeatTime`` kept). A node that never posted a Ready condition gets them after
  ``startup_grace_period`` (60 s, ``--node-startup-grace-period``) from its creation (or from its
  Lease's last renewal seen), reason
  ``NodeStatusNeverUpdated``, message ``Kubelet never posted node status.``. The kubelet's next
  status post replaces them. Upstream looks every ``--node-monitor-period`` (5 s); here the node is
  looked at again exactly when its grace period ends.

  A simulated kubelet misses heartbeats only when it is stopped (the node fault ``kubelet-stopped``,
  :mod:`._nodes`), so a simulated node whose kubelet runs is never declared Unknown: a heartbeat
  of it that looks late has been outrun by a fake clock moved past several heartbeats at once, and
  declaring it Unknown would make every large ``FakeClock.advance`` evict pods. Every other node
  (not simulated, or simulated with its kubelet stopped) is judged on its heartbeats alone, as
  upstream judges every node. The deadline counts from the last heartbeat seen, as upstream's does.
- **NoSchedule taints** (``doNoScheduleTaintingPass``): Ready False -> ``node.kubernetes.io/not-ready``,
  Ready Unknown -> ``node.kubernetes.io/unreachable``, MemoryPressure/DiskPressure/PIDPressure/
  NetworkUnavailable True -> ``memory-pressure``/``disk-pressure``/``pid-pressure``/
  ``network-unavailable``, ``spec.unschedulable`` -> ``node.kubernetes.io/unschedulable``.
- **NoExecute taints** (``processTaintBaseEviction``): Ready False -> ``not-ready``, Unknown ->
  ``unreachable`` (swapped at once when the state changes), True -> neither. When no node of the
  cluster is Ready, no node gets them and those present are removed (upstream's "master disruption
  mode": every zone fully disrupted looks like a control-plane problem, so nothing is evicted).
- Taints this controller adds carry ``timeAdded`` (``SwapNodeControllerTaint`` stamps every taint it
  adds); a taint already present is kept as it is. Other taints are never touched.
- **Pods** (``MarkPodsNotReady``): on a node whose Ready is not True, each pod's Ready condition is
  set False (its other conditions are the kubelet's) with a Warning ``NodeNotReady`` "Node is not
  ready" Event; when this controller itself turns a Ready node Unknown it records a Normal
  ``NodeNotReady`` "Node <name> status is now: NodeNotReady" Event on the node (a Ready False the
  kubelet posts is the kubelet's to report). Events come from ``node-controller``.

Evicting pods once their tolerations of the NoExecute taints run out is the taint-eviction
controller's part (:mod:`._taint_eviction_controller`), on every node too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound, copy_json, format_time, parse_time
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._nodes import (
    NODE_LEASE_NAMESPACE,
    NODE_NAME_INDEX,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    is_kubelet_stopped,
    is_node_ready,
    is_simulated,
    node_name_of_pod,
    ready_status,
)
from kubeloop.controllers._scheduler_fit import UNSCHEDULABLE_TAINT
from kubeloop.controllers._scheduler_resources import LEASES, NODES, PODS
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["NODE_MONITOR_GRACE_PERIOD", "NODE_STARTUP_GRACE_PERIOD", "NodeLifecycleController", "desired_taints"]

log = logging.getLogger("kubeloop.controllers.nodelifecycle")

NODE_MONITOR_GRACE_PERIOD = 50.0  # 1.32's default (kubernetes/kubernetes#126287; 40 s before)
NODE_STARTUP_GRACE_PERIOD = 60.0
_PRESSURE = ("MemoryPressure", "DiskPressure", "PIDPressure")  # NetworkUnavailable is left alone, as upstream
# nodeConditionToTaintKeyStatusMap
_CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": NOT_READY_TAINT, "Unknown": UNREACHABLE_TAINT},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
_NO_SCHEDULE_KEYS = frozenset({UNSCHEDULABLE_TAINT, *(k for m in _CONDITION_TAINTS.values() for k in m.values())})
_NO_EXECUTE_KEYS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT})


def _managed(taint: Mapping[str, Any]) -> bool:
    effect, key = taint.get("effect"), taint.get("key")
    return (effect == "NoSchedule" and key in _NO_SCHEDULE_KEYS) or (effect == "NoExecute" and key in _NO_EXECUTE_KEYS)


def desired_taints(node: Mapping[str, Any], now: float, *, evictions: bool = True) -> list[dict[str, Any]]:
    """The node's taints once this controller is done: its own from the conditions, every other kept.

    ``evictions`` False is the all-nodes-down mode: no NoExecute taint."""
    spec = node.get("spec") or {}
    current = [t for t in spec.get("taints") or () if isinstance(t, dict)]
    conditions = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or ()}
    wanted: list[tuple[str, str]] = []
    for type_, by_status in _CONDITION_TAINTS.items():
        key = by_status.get(str(conditions.get(type_)))
        if key:
            wanted.append((key, "NoSchedule"))
    if spec.get("unschedulable"):
        wanted.append((UNSCHEDULABLE_TAINT, "NoSchedule"))
    ready = conditions.get("Ready")
    if evictions and ready in ("False", "Unknown"):
        wanted.append((NOT_READY_TAINT if ready == "False" else UNREACHABLE_TAINT, "NoExecute"))
    have = {(t.get("key"), t.get("effect")) for t in current}
    out = [t for t in current if not _managed(t) or (t.get("key"), t.get("effect")) in wanted]
    stamp = format_time(now)
    out += [{"key": key, "effect": effect, "timeAdded": stamp} for key, effect in wanted if (key, effect) not in have]
    return out


def _unknown(old: Mapping[str, Any] | None, type_: str, stamp: str, created: str) -> dict[str, Any]:
    if not old:
        return {"type": type_, "status": "Unknown", "lastHeartbeatTime": created, "lastTransitionTime": stamp,
                "reason": "NodeStatusNeverUpdated", "message": "Kubelet never posted node status."}
    if old.get("status") == "Unknown":
        return dict(old)
    return {**old, "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
            "lastTransitionTime": stamp}


def unknown_conditions(node: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
    """The node's conditions once its kubelet is declared gone (``tryUpdateNodeHealth``)."""
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or ()]
    by_type = {c.get("type"): i for i, c in enumerate(conditions)}
    stamp = format_time(now)
    created = str((node.get("metadata") or {}).get("creationTimestamp") or stamp)
    for type_ in ("Ready", *_PRESSURE):
        index = by_type.get(type_)
        if index is None:
            conditions.append(_unknown(None, type_, stamp, created))
        else:
            conditions[index] = _unknown(conditions[index], type_, stamp, created)
    return conditions


def _heartbeat(node: Mapping[str, Any], lease: Mapping[str, Any] | None) -> tuple[str, str]:
    """What moves while the kubelet is alive: the Ready heartbeat and the Lease's renewTime."""
    ready: Mapping[str, Any] = next(
        (c for c in (node.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), {})
    return str(ready.get("lastHeartbeatTime") or ""), str(((lease or {}).get("spec") or {}).get("renewTime") or "")


def _readiness_changed(event: Event) -> bool:
    if event.type != "update" or event.old_object is None:
        return True
    return ready_status(event.old_object) != ready_status(event.object)


class NodeLifecycleController:
    """Watches every node's heartbeats and keeps its health conditions and taints. Build it on a
    manager before it runs."""

    def __init__(self, manager: Manager, *, grace_period: float = NODE_MONITOR_GRACE_PERIOD,
                 startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.nodes = manager.informer(NODES)
        self.leases = manager.informer(LEASES)
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({NODE_NAME_INDEX: node_name_of_pod})
        self.events = EventSink(self.client, component="node-controller", clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        # node -> (heartbeat seen, when this controller saw it move): upstream's nodeHealthMap
        self._probes: dict[str, tuple[tuple[str, str], float]] = {}
        self.controller = (
            Builder(manager).named("node-lifecycle-controller").for_(NODES)
            .watches(NODES, EnqueueMapped(self._all_nodes), _readiness_changed)
            .watches(LEASES, EnqueueMapped(_lease_node))
            .watches(PODS, EnqueueMapped(self._unready_node_of)).build(self)
        )

    def _unready_node_of(self, pod: Mapping[str, Any]) -> list[Request]:
        """A pod event matters only on a node that is not Ready (its Ready condition to mark False)."""
        names = node_name_of_pod(pod)
        node = self.nodes.cache.get_by_name(names[0]) if names else None
        return [Request("", names[0])] if node is not None and not is_node_ready(node) else []

    def _all_nodes(self, _: Mapping[str, Any]) -> list[Request]:
        """Any node's readiness changing may start or end the all-nodes-down mode on every node."""
        return [Request("", str(n["metadata"]["name"])) for n in self.nodes.cache.list()]

    async def reconcile(self, request: Request) -> Result | None:
        node = self.nodes.cache.get_by_name(request.name)
        if node is None:
            self._probes.pop(request.name, None)
            return None
        now = self.clock.now()
        was_ready = is_node_ready(node)
        deadline = self._deadline(node, now)
        if is_simulated(node) and not is_kubelet_stopped(node):
            deadline = math.inf  # a running simulated kubelet heartbeats: a stale one is a fake-clock jump
        elif now >= deadline:
            node = await self._mark_unknown(node, now)
        ready = is_node_ready(node)
        if was_ready and not ready:  # turned Unknown here (a Ready False the kubelet posts is its own to report)
            self.events.emit(node, "Normal", "NodeNotReady", f"Node {request.name} status is now: NodeNotReady",
                             api_version="v1", kind="Node")
        await self._sync_taints(node, now)
        if not ready:
            await self._mark_pods_not_ready(request.name, now)
        return Result(requeue_after=deadline - now) if now < deadline < math.inf else None

    def _deadline(self, node: Mapping[str, Any], now: float) -> float:
        name = str(node["metadata"]["name"])
        seen = _heartbeat(node, self.leases.cache.get_by_name(name, NODE_LEASE_NAMESPACE))
        probe = self._probes.get(name)
        never_posted = ready_status(node) is None
        if probe is None or probe[0] != seen:
            # A heartbeat seen moving counts from now; a node first seen without a Ready condition or
            # a Lease counts from its creation (upstream's probeTimestamp).
            created = (node.get("metadata") or {}).get("creationTimestamp")
            first = probe is None and never_posted and not seen[1] and bool(created)
            probe = self._probes[name] = (seen, parse_time(str(created)) if first else now)
        return probe[1] + (self.startup_grace_period if never_posted else self.grace_period)

    async def _mark_unknown(self, node: dict[str, Any], now: float) -> dict[str, Any]:
        conditions = unknown_conditions(node, now)
        if conditions == (node.get("status") or {}).get("conditions"):
            return node
        status = {**copy_json(node.get("status") or {}), "conditions": conditions}
        log.info("node %s: kubelet stopped posting node status", node["metadata"]["name"])
        try:
            updated: dict[str, Any] = await self.client.update(NODES, {**node, "status": status}, subresource="status")
        except NotFound:
            return node
        return updated

    async def _sync_taints(self, node: dict[str, Any], now: float) -> None:
        name = node["metadata"]["name"]
        evictions = is_node_ready(node) or any(
            is_node_ready(n) for n in self.nodes.cache.list() if n["metadata"]["name"] != name)
        taints = desired_taints(node, now, evictions=evictions)
        if taints == ((node.get("spec") or {}).get("taints") or []):
            return
        spec = {**(node.get("spec") or {}), "taints": taints}
        if not taints:
            spec.pop("taints")
        try:
            await self.client.update(NODES, {**node, "spec": spec})
        except NotFound:
            pass

    async def _mark_pods_not_ready(self, node_name: str, now: float) -> None:
        for pod in self.pods.cache.by_index(NODE_NAME_INDEX, node_name):
            status = pod.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            conditions = [dict(c) for c in status.get("conditions") or ()]
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue  # upstream changes an existing Ready condition only
            ready.update(status="False", lastTransitionTime=format_time(now))
            meta = pod["metadata"]
            try:
                await self.client.update(PODS, {**pod, "status": {**status, "conditions": conditions}},
                                         namespace=meta.get("namespace"), subresource="status")
            except NotFound:
                continue
            self.events.emit(pod, "Warning", "NodeNotReady", "Node is not ready", api_version="v1", kind="Pod")


def _lease_node(lease: Mapping[str, Any]) -> list[Request]:
    meta = lease.get("metadata") or {}
    if meta.get("namespace") != NODE_LEASE_NAMESPACE:
        return []
    return [Request("", str(meta.get("name") or ""))]
