"""The simulated kubelet: pod status for pods bound to simulated nodes, graceful deletion, node faults.

:class:`KubeletSimulator` reconciles every pod whose ``spec.nodeName`` is a simulated node
(:func:`._nodes.is_simulated`). Per pod it computes the status the simulated world shows at
``now`` (:func:`._kubelet_profiles.simulate_pod`: phases, container states, restart counts and
conditions from the pod's fault profile) plus ``hostIP`` and a ``podIP`` from the node's pod CIDR,
writes it through ``/status`` only when it differs from what is stored, and sleeps until the next
change on the injected clock. Status is only ever derived from that simulation, never from a spec.

- Terminal pods (Succeeded, Failed) are left alone, as a kubelet leaves them.
- Graceful deletion: a pod with ``deletionTimestamp`` is stopped (containers terminated, not ready)
  and, once its grace period has run out on the clock (or ``termination_delay`` after the delete,
  when configured), removed with a final delete with ``gracePeriodSeconds=0`` and a UID precondition,
  as the kubelet's status manager does.
- A NotReady node: its pods are not ready (the node lifecycle controller's ``MarkPodsNotReady``);
  after ``not_ready_eviction_seconds`` from the ``node.kubernetes.io/not-ready:NoExecute`` taint (or
  the pod's own ``tolerationSeconds`` for it) they are deleted (taint-based eviction); a pod that
  tolerates the taint forever stays.
- Events as a kubelet records them (``Pulling``, ``Pulled``, ``Created``, ``Started``, ``BackOff``,
  ``Killing``, ``Unhealthy``; :mod:`._kubelet_events`), from component ``kubelet``, only after a
  status write that shows the change succeeded, through an :class:`._events.EventSink` the manager
  runs (repeats, such as a crash loop's, are counted on one Event).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound, parse_time
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._kubelet_events import kubelet_events
from kubeloop.controllers._kubelet_profiles import behaviour_of, simulate_pod
from kubeloop.controllers._nodes import (
    NOT_READY_TAINT,
    SimulationOptions,
    is_node_ready,
    is_simulated,
    node_internal_ip,
)
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["NODE_NAME_INDEX", "KubeletSimulator"]

log = logging.getLogger("kubeloop.controllers.kubelet")

NODE_NAME_INDEX = "spec.nodeName"


def _node_name(pod: Mapping[str, Any]) -> list[str]:
    name = (pod.get("spec") or {}).get("nodeName")
    return [str(name)] if name else []


def _readiness_changed(event: Event) -> bool:
    if event.type != "update" or event.old_object is None:
        return True
    old, new = event.old_object, event.object
    return is_node_ready(old) != is_node_ready(new) or is_simulated(old) != is_simulated(new) or (
        (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints"))


def _tolerates_not_ready(toleration: Mapping[str, Any]) -> bool:
    """v1 Toleration.ToleratesTaint for ``node.kubernetes.io/not-ready:NoExecute`` (empty value)."""
    if toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    key = toleration.get("key") or ""
    if toleration.get("operator") == "Exists":
        return key in ("", NOT_READY_TAINT)
    return key == NOT_READY_TAINT and not toleration.get("value")


def _eviction_after(pod: Mapping[str, Any], default: float) -> float | None:
    """Seconds a pod stays on a not-ready node: its toleration's ``tolerationSeconds``, else ``default``."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or ():
        if _tolerates_not_ready(toleration):
            seconds = toleration.get("tolerationSeconds")
            return None if seconds is None else max(0.0, float(seconds))
    return default


class KubeletSimulator:
    """Plays the kubelet for pods on simulated nodes. Build it on a manager before it runs."""

    def __init__(self, manager: Manager, options: SimulationOptions | None = None, *,
                 max_concurrent_reconciles: int = 4) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.options = options or SimulationOptions()
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({NODE_NAME_INDEX: _node_name})
        self.nodes = manager.informer(NODES)
        self.events = EventSink(self.client, component="kubelet", clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        self._reserved: dict[str, str] = {}  # pod IP -> pod uid, for IPs written but maybe not cached yet
        self.controller = (
            Builder(manager).named("kubeloop-kubelet").for_(PODS)
            .watches(NODES, EnqueueMapped(self._pods_on), _readiness_changed)
            .with_options(max_concurrent_reconciles=max_concurrent_reconciles).build(self)
        )

    def _pods_on(self, node: Mapping[str, Any]) -> list[Request]:
        name = str((node.get("metadata") or {}).get("name") or "")
        return [Request.for_object(p) for p in self.pods.cache.by_index(NODE_NAME_INDEX, name)]

    async def reconcile(self, request: Request) -> Result | None:
        pod = self.pods.cache.get_by_name(request.name, request.namespace)
        if pod is None:
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.cache.get_by_name(str(node_name)) if node_name else None
        if node is None or not is_simulated(node):
            return None
        meta = pod["metadata"]
        status = pod.get("status") or {}
        deleting = bool(meta.get("deletionTimestamp"))
        if status.get("phase") in ("Succeeded", "Failed") and not deleting:
            return None
        now = self.clock.now()
        node_ready = is_node_ready(node)
        evict_at: float | None = None
        if not node_ready and not deleting:
            evict_at = self._evict_at(pod, node, now)
            if evict_at is not None and now >= evict_at:
                log.info("evicting %s/%s from not-ready node %s", request.namespace, request.name, node_name)
                try:
                    await self.client.delete(PODS, request.name, namespace=request.namespace,
                                             preconditions={"uid": meta.get("uid")})
                except NotFound:
                    pass
                return None
        sim = simulate_pod(
            pod, now, node_ready=node_ready, host_ip=node_internal_ip(node), pod_ip=self._pod_ip(pod, node),
            start_delay=self.options.container_start_delay, ready_delay=self.options.readiness_delay,
            termination_delay=self.options.termination_delay,
        )
        if sim.status != status:
            await self.client.update(PODS, {**pod, "status": sim.status}, namespace=request.namespace,
                                     subresource="status")
            start_delay = behaviour_of(pod, start_delay=self.options.container_start_delay, ready_delay=0.0).start_delay
            for event_type, reason, message in kubelet_events(pod, status, sim.status, pull_seconds=start_delay):
                self.events.emit(pod, event_type, reason, message, api_version="v1", kind="Pod")
        if sim.delete:
            try:
                await self.client.delete(PODS, request.name, namespace=request.namespace, grace_period_seconds=0,
                                         preconditions={"uid": meta.get("uid")})
            except NotFound:
                pass
            self._reserved.pop(str(sim.status.get("podIP") or ""), None)
            return None
        wakes = [t for t in (sim.wake_at, evict_at) if t is not None]
        return Result(requeue_after=max(0.001, min(wakes) - now)) if wakes else None

    def _evict_at(self, pod: Mapping[str, Any], node: Mapping[str, Any], now: float) -> float | None:
        after = _eviction_after(pod, self.options.not_ready_eviction_seconds)
        if after is None:
            return None
        since = now
        for taint in (node.get("spec") or {}).get("taints") or ():
            if taint.get("key") == NOT_READY_TAINT and taint.get("effect") == "NoExecute" and taint.get("timeAdded"):
                since = parse_time(taint["timeAdded"])
        return since + after

    def _pod_ip(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> str:
        existing = (pod.get("status") or {}).get("podIP")
        if existing:
            return str(existing)
        cidr = str((node.get("spec") or {}).get("podCIDR") or "10.0.0.0/16")
        octets = cidr.split("/")[0].split(".")
        prefix = f"{octets[0]}.{octets[1]}"
        uid = str(pod["metadata"].get("uid") or "")
        used = {str((p.get("status") or {}).get("podIP") or "")
                for p in self.pods.cache.by_index(NODE_NAME_INDEX, str(node["metadata"]["name"]))}
        if len(self._reserved) > 10_000:
            live = {str(p["metadata"].get("uid")) for p in self.pods.cache.list()}
            self._reserved = {ip: owner for ip, owner in self._reserved.items() if owner in live}
        start = int(hashlib.sha1(uid.encode()).hexdigest()[:8], 16)
        for step in range(65_000):
            n = (start + step) % 65_000 + 2
            ip = f"{prefix}.{n // 256}.{n % 256}"
            if n % 256 in (0, 255) or ip in used or self._reserved.get(ip, uid) != uid:
                continue
            self._reserved[ip] = uid
            return ip
        return ""
