"""Simulated nodes: registration, status and heartbeats (Leases), and the node faults.

:class:`NodeSimulator` plays the node half of a kubelet for every Node annotated
``kubeloop.dev/simulated: "true"`` (kwok's ``--manage-nodes-with-annotation-selector``):

- On start it registers ``options.nodes`` nodes named ``kubeloop-node-1`` ... with capacity and
  allocatable (cpu, memory, pods, ephemeral-storage), labels (``kubernetes.io/hostname``, os, arch,
  ``node-role.kubernetes.io/worker``), ``spec.podCIDR``, addresses and ``nodeInfo`` (kubelet
  v1.32.0); a configured node that is deleted is registered again, as a kubelet would.
- A Node a user creates with the annotation gets a kubelet too: its first status post fills what a
  kubelet reports about its machine and the user left out (``setNodeStatusMachineInfo``; kwok's
  ``node-initialize`` stage keeps given values the same way): ``capacity`` from the options (as
  :data:`SimulationOptions` sizes every simulated node), ``allocatable`` equal to the capacity (no
  reservations), ``addresses``, ``daemonEndpoints`` and ``nodeInfo``. Values the user gave are kept.
  A Node without the annotation has no kubelet here: nothing but the node lifecycle controller
  writes its status, so it has no capacity (the scheduler places nothing on it), as a real Node
  object whose kubelet never starts: after the startup grace period that controller turns it Ready
  Unknown and taints it, as upstream's does for every node (:mod:`._node_lifecycle`). Whoever posts
  its status and renews its Lease instead (another kubelet, a test) keeps it Ready.
- Heartbeats run on the injected clock: the Lease ``kube-node-lease/<node>`` (40 s duration) is
  renewed every ``lease_renew_interval`` (10 s); the status is written when a condition changes or
  when ``lastHeartbeatTime`` is older than ``status_report_interval`` (5 min,
  ``nodeStatusReportFrequency``). Between those moments nothing is written.
- Faults, by the node annotation ``kubeloop.dev/fault``:

  - ``not-ready``: the kubelet posts ``Ready`` False (``KubeletNotReady``); removing the annotation
    makes it post True again.
  - ``kubelet-stopped``: the kubelet is down: it neither renews its Lease nor posts status, and
    (:mod:`._kubelet`) does nothing for its pods. The node lifecycle controller
    (:mod:`._node_lifecycle`) then declares the node ``Unknown`` and taints it ``unreachable``.
    Removing the annotation starts the kubelet again: it renews the Lease and posts Ready True.

  The taints that follow from the conditions are the node lifecycle controller's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api import (
    AlreadyExists,
    Conflict,
    NotFound,
    copy_json,
    format_micro_time,
    format_time,
    parse_time,
)
from kubeloop.client import Client
from kubeloop.controllers._scheduler_resources import LEASES, NODES
from kubeloop.runtime import Builder, EnqueueMapped, Manager, Request, Result

__all__ = [
    "FAULT_ANNOTATION",
    "KUBELET_STOPPED",
    "NODE_LEASE_NAMESPACE",
    "NODE_NAME_INDEX",
    "NOT_READY_TAINT",
    "SIMULATED_ANNOTATION",
    "UNREACHABLE_TAINT",
    "NodeSimulator",
    "SimulationOptions",
    "is_kubelet_stopped",
    "is_node_ready",
    "is_simulated",
    "node_internal_ip",
    "node_name_of_pod",
    "ready_status",
]

log = logging.getLogger("kubeloop.controllers.nodes")

SIMULATED_ANNOTATION = "kubeloop.dev/simulated"
FAULT_ANNOTATION = "kubeloop.dev/fault"
NODE_LEASE_NAMESPACE = "kube-node-lease"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
KUBELET_STOPPED = "kubelet-stopped"  # the fault that stops a node's kubelet
NODE_NAME_INDEX = "spec.nodeName"  # pods by the node they are bound to
KUBELET_VERSION = "v1.32.0"


@dataclass(frozen=True, kw_only=True)
class SimulationOptions:
    """The simulated world: nodes and their capacity, and the timing of kubelet-like behaviour."""

    nodes: int = 3
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    # Above the kubelet's default maxPods (110) so that a laptop-sized cluster of three nodes holds
    # thousands of pods; set it to 110 for upstream's number.
    node_pods: str = "1000"
    node_ephemeral_storage: str = "100Gi"
    lease_duration_seconds: int = 40
    lease_renew_interval: float = 10.0
    status_report_interval: float = 300.0
    # Pods: seconds from the kubelet seeing a pod to its containers running, then to Ready.
    container_start_delay: float = 0.0
    readiness_delay: float = 0.0
    # Seconds containers take to stop after a delete; None waits out the whole grace period.
    termination_delay: float | None = None

    def node_names(self) -> list[str]:
        return [f"kubeloop-node-{i}" for i in range(1, self.nodes + 1)]


def is_simulated(node: Mapping[str, Any] | None) -> bool:
    return bool(node) and ((node or {}).get("metadata") or {}).get("annotations", {}).get(SIMULATED_ANNOTATION) == "true"


def ready_status(node: Mapping[str, Any] | None) -> str | None:
    """The Ready condition's status (``True``, ``False``, ``Unknown``), None when there is none."""
    for condition in ((node or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return None


def is_node_ready(node: Mapping[str, Any] | None) -> bool:
    return ready_status(node) == "True"


def is_kubelet_stopped(node: Mapping[str, Any] | None) -> bool:
    return bool(((node or {}).get("metadata") or {}).get("annotations", {}).get(FAULT_ANNOTATION) == KUBELET_STOPPED)


def node_name_of_pod(pod: Mapping[str, Any]) -> list[str]:
    """The index function of :data:`NODE_NAME_INDEX`."""
    name = (pod.get("spec") or {}).get("nodeName")
    return [str(name)] if name else []


def node_internal_ip(node: Mapping[str, Any] | None) -> str:
    for address in ((node or {}).get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP":
            return str(address.get("address") or "")
    return ""


def _index_of(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else sum(name.encode()) % 250 + 1


def new_node(name: str, options: SimulationOptions) -> dict[str, Any]:
    i = _index_of(name)
    resources = {"cpu": options.node_cpu, "memory": options.node_memory, "pods": options.node_pods,
                 "ephemeral-storage": options.node_ephemeral_storage}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
                       "node-role.kubernetes.io/worker": "", "type": "kubeloop"},
            "annotations": {SIMULATED_ANNOTATION: "true", "node.alpha.kubernetes.io/ttl": "0"},
        },
        # A /16 per node (upstream hands out /24s) because simulated nodes hold far more than 254 pods.
        "spec": {"podCIDR": f"10.{i % 256}.0.0/16", "podCIDRs": [f"10.{i % 256}.0.0/16"],
                 "providerID": f"kubeloop://{name}"},
        "status": {
            "capacity": dict(resources), "allocatable": dict(resources),
            "addresses": [{"type": "InternalIP", "address": f"172.18.{i // 250}.{i % 250 + 2}"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"kubeloop-{i:08d}", "systemUUID": f"kubeloop-{i:08d}", "bootID": f"kubeloop-{i:08d}",
                "kernelVersion": "6.1.0-kubeloop", "osImage": "kubeloop simulated node",
                "containerRuntimeVersion": "kubeloop://0.1.0", "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION, "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    }


_PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def desired_conditions(node: Mapping[str, Any], now: float, *, heartbeat: bool) -> list[dict[str, Any]]:
    """The node's conditions as the kubelet would post them; times move only when due or changed."""
    current = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or ()}
    faulty = ((node.get("metadata") or {}).get("annotations") or {}).get(FAULT_ANNOTATION) == "not-ready"
    wanted = [(t, "False", r, m) for t, r, m in _PRESSURE]
    if faulty:
        wanted.append(("Ready", "False", "KubeletNotReady",
                       "container runtime network not ready: kubeloop fault injection (not-ready)"))
    else:
        wanted.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    stamp = format_time(now)
    out = []
    for type_, status, reason, message in wanted:
        old = current.get(type_) or {}
        changed = old.get("status") != status
        out.append({
            "type": type_, "status": status,
            "lastHeartbeatTime": stamp if heartbeat or changed or not old else old.get("lastHeartbeatTime"),
            "lastTransitionTime": stamp if changed or not old.get("lastTransitionTime") else old["lastTransitionTime"],
            "reason": reason, "message": message,
        })
    return out


class NodeSimulator:
    """Registers simulated nodes, keeps their status and leases fresh (unless their kubelet is stopped)."""

    def __init__(self, manager: Manager, options: SimulationOptions | None = None) -> None:
        self.client: Client = manager.client
        self.clock = manager.clock
        self.options = options or SimulationOptions()
        self.nodes = manager.informer(NODES)
        self.leases = manager.informer(LEASES)
        self.controller = (
            Builder(manager).named("kubeloop-node-simulator").for_(NODES)
            .watches(LEASES, EnqueueMapped(_lease_owner)).build(self)
        )
        manager.add(_Register(self), needs_leader_election=True)

    async def register(self) -> None:
        for name in self.options.node_names():
            try:
                await self.client.create(NODES, new_node(name, self.options))
            except AlreadyExists:
                self.controller.enqueue(Request("", name))

    async def reconcile(self, request: Request) -> Result | None:
        node = self.nodes.cache.get_by_name(request.name)
        if node is None:
            if request.name in self.options.node_names():
                try:
                    await self.client.create(NODES, new_node(request.name, self.options))
                except AlreadyExists:
                    pass
            return None
        if not is_simulated(node) or is_kubelet_stopped(node):
            return None
        now = self.clock.now()
        node = await self._sync_status(node, now)
        lease_due = await self._renew_lease(node, now)
        status_due = self._status_due(node, now)
        return Result(requeue_after=max(0.001, min(lease_due, status_due) - now))

    def _status_due(self, node: Mapping[str, Any], now: float) -> float:
        beats = [parse_time(c["lastHeartbeatTime"]) for c in (node.get("status") or {}).get("conditions") or ()
                 if c.get("lastHeartbeatTime")]
        return (min(beats) if beats else now) + self.options.status_report_interval

    async def _sync_status(self, node: dict[str, Any], now: float) -> dict[str, Any]:
        heartbeat = self._status_due(node, now) <= now
        status = copy_json(node.get("status") or {})
        _fill_machine_info(status, new_node(str(node["metadata"]["name"]), self.options)["status"])
        status["conditions"] = desired_conditions(node, now, heartbeat=heartbeat)
        if status == node.get("status"):
            return node
        return await self.client.update(NODES, {**node, "status": status}, subresource="status")

    async def _renew_lease(self, node: Mapping[str, Any], now: float) -> float:
        name = node["metadata"]["name"]
        lease = self.leases.cache.get_by_name(name, NODE_LEASE_NAMESPACE)
        interval = self.options.lease_renew_interval
        if lease is not None:
            renewed = (lease.get("spec") or {}).get("renewTime")
            if renewed and parse_time(renewed) + interval > now:
                return parse_time(renewed) + interval
        spec = {"holderIdentity": name, "leaseDurationSeconds": self.options.lease_duration_seconds,
                "renewTime": format_micro_time(now)}
        try:
            if lease is None:
                await self.client.create(LEASES, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE, "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"].get("uid")}]},
                    "spec": spec}, namespace=NODE_LEASE_NAMESPACE)
            else:
                await self.client.update(LEASES, {**lease, "spec": {**(lease.get("spec") or {}), **spec}},
                                         namespace=NODE_LEASE_NAMESPACE)
        except (AlreadyExists, Conflict, NotFound):
            return now + 0.05  # the cache lags; look again shortly
        return now + interval


def _fill_machine_info(status: dict[str, Any], machine: Mapping[str, Any]) -> None:
    """What the kubelet reports about its machine, where ``status`` has none: capacity, allocatable (the
    capacity itself when only that was given), addresses, daemon endpoints, node info."""
    if _is_zero(status.get("capacity")):
        status["capacity"] = dict(machine["capacity"])
    if _is_zero(status.get("allocatable")):
        status["allocatable"] = dict(status["capacity"])
    for key in ("addresses", "daemonEndpoints", "nodeInfo"):
        if _is_zero(status.get(key)):
            status[key] = copy_json(machine[key])


def _is_zero(value: Any) -> bool:
    """Absent, or Go's zero value as the API server renders it (``nodeInfo`` of empty strings,
    ``daemonEndpoints`` with port 0)."""
    if isinstance(value, Mapping):
        return all(_is_zero(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return value in (None, "", 0)


def _lease_owner(lease: Mapping[str, Any]) -> list[Request]:
    meta = lease.get("metadata") or {}
    if meta.get("namespace") != NODE_LEASE_NAMESPACE:
        return []
    return [Request("", str(meta.get("name") or ""))]


class _Register:
    def __init__(self, simulator: NodeSimulator) -> None:
        self.simulator = simulator

    async def run(self) -> None:
        await self.simulator.nodes.wait_for_sync()
        await self.simulator.register()
