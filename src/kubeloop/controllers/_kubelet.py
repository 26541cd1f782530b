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
- A NotReady node: its containers are not ready (the kubelet still runs and says so).
- A node whose kubelet is stopped (fault ``kubelet-stopped``, :mod:`._nodes`): nothing is written for
  its pods (no status, no final delete: a pod deleted meanwhile stays Terminating until the kubelet
  comes back). Marking its pods not ready is the node lifecycle controller's part
  (:mod:`._node_lifecycle`), evicting them the taint-eviction controller's
  (:mod:`._taint_eviction_controller`), as on any node.
- Images (:mod:`._kubelet_images`): once a pod's container has started, its images are listed in the
  node's ``status.images`` (largest first, at most 50), which the scheduler's ImageLocality reads.
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

from kubeloop.api import NotFound
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._kubelet_events import kubelet_events
from kubeloop.controllers._kubelet_images import NodeImages
from kubeloop.controllers._kubelet_profiles import behaviour_of, simulate_pod
from kubeloop.controllers._nodes import (
    NODE_NAME_INDEX,
    SimulationOptions,
    is_kubelet_stopped,
    is_node_ready,
    is_simulated,
    node_internal_ip,
    node_name_of_pod,
)
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.controllers._taint_eviction_controller import disruption_target
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["NODE_NAME_INDEX", "KubeletSimulator", "disruption_target"]  # disruption_target: moved, re-exported

log = logging.getLogger("kubeloop.controllers.kubelet")


def _readiness_changed(event: Event) -> bool:
    if event.type != "update" or event.old_object is None:
        return True
    old, new = event.old_object, event.object
    return is_node_ready(old) != is_node_ready(new) or is_simulated(old) != is_simulated(new) or (
        is_kubelet_stopped(old) != is_kubelet_stopped(new))


class KubeletSimulator:
    """Plays the kubelet for pods on simulated nodes. Build it on a manager before it runs."""

    def __init__(self, manager: Manager, options: SimulationOptions | None = None, *,
                 max_concurrent_reconciles: int = 4) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.options = options or SimulationOptions()
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({NODE_NAME_INDEX: node_name_of_pod})
        self.nodes = manager.informer(NODES)
        self.events = EventSink(self.client, component="kubelet", clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        self._reserved: dict[str, str] = {}  # pod IP -> pod uid, for IPs written but maybe not cached yet
        self.images = NodeImages(self.client)
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
        now = self.clock.now()
        if status.get("phase") in ("Succeeded", "Failed") and not deleting:
            return None
        node_ready = is_node_ready(node)
        if is_kubelet_stopped(node):
            return None
        sim = simulate_pod(
            pod, now, node_ready=node_ready, host_ip=node_internal_ip(node), pod_ip=self._pod_ip(pod, node),
            start_delay=self.options.container_start_delay, ready_delay=self.options.readiness_delay,
            termination_delay=self.options.termination_delay,
        )
        if sim.status != status:
            await self.client.update(PODS, {**pod, "status": sim.status}, namespace=request.namespace,
                                     subresource="status")
            await self.images.pod_ran(node, pod, sim.status)
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
        return Result(requeue_after=max(0.001, sim.wake_at - now)) if sim.wake_at is not None else None

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
