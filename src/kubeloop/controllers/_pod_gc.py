"""The pod garbage collector: kube-controller-manager's ``pod-garbage-collector``, its four steps.

Upstream: k/k ``pkg/controller/podgc/gc_controller.go`` (release 1.32). Each step force-deletes pods
with ``markFailedAndDeletePodWithCondition``: a pod that has not finished (phase neither Succeeded
nor Failed) is first patched to ``phase: Failed`` (plus a condition, for orphans only), the pod's UID
as precondition, then deleted with a grace period of 0, since no kubelet will confirm that its
containers stopped (:mod:`._pod_gc_rules`). The steps:

- ``gcTerminated``: when more pods are terminated (phase Succeeded or Failed) than
  ``terminated_pod_threshold`` (``--terminated-pod-gc-threshold``, default 12500; 0 turns the step
  off), the surplus goes, evicted pods first, then the oldest by ``creationTimestamp``, then by name
  (``byEvictionAndCreationTimestamp``). Pods held by finalizers (a Job's ``job-tracking``) are
  counted and deleted like any other: they go when their finalizers are removed.
- ``gcTerminating`` (NodeOutOfServiceVolumeDetach, GA in 1.28): pods being deleted on a node that is
  not Ready and has the ``node.kubernetes.io/out-of-service`` taint (any value and effect) are
  force-deleted, oldest first. The pod GC adds no condition here (upstream calls
  ``markFailedAndDeletePod``); the taint-eviction controller adds ``DisruptionTarget`` to pods it
  evicts for the taint's ``NoExecute``.
- ``gcOrphaned``: a node that pods are bound to (``spec.nodeName``) but that the node informer does
  not have is put in quarantine for 40 s (``quarantineTime``), so a node that is being (re)registered
  is not mistaken for a deleted one; after it the node is read from the API server, and only a 404
  makes its pods orphans, failed with the condition ``DisruptionTarget`` (``reason:
  DeletionByPodGC``, ``message: PodGC: node no longer exists``) and deleted.
- ``gcUnscheduledTerminating``: pods being deleted that no node was ever assigned (``spec.nodeName``
  empty; only finalizers keep such a pod, as the API server deletes an unscheduled pod at once) are
  failed and force-deleted.

Metrics (``pkg/controller/podgc/metrics``), in the manager's registry:
``pod_gc_collector_force_delete_pods_total{namespace,reason}`` counts every force-delete attempted and
``pod_gc_collector_force_delete_pod_errors_total{namespace,reason}`` those that failed (a pod already
gone included), ``reason`` one of ``terminated``, ``out-of-service``, ``orphaned``, ``unscheduled``.
Upstream records no Events.

Upstream runs the steps every 20 s over every pod; here pods and nodes are watched and each step is
a request, level-based (it reads the caches as they are when it runs): ``("", node)`` runs the
out-of-service and orphan steps for the pods bound to that node name, looking again when its
quarantine ends; ``(namespace, pod)`` the unscheduled-terminating step for one pod; and
:data:`TERMINATED_SWEEP` (``("", "")``, a name no node can have) the terminated-pods step. A failed
write fails the request, which is retried with backoff. Time is the injected clock.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from kubeloop.api import NotFound, name_of, namespace_of
from kubeloop.controllers._nodes import NODE_NAME_INDEX, node_name_of_pod
from kubeloop.controllers._pod_gc_rules import (
    TERMINATED_INDEX,
    deletion_order,
    failed_status_patch,
    index_terminated,
    is_out_of_service,
    is_terminated,
    is_terminating,
)
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.runtime import Controller, Event, Manager, Request, Result, Watch

__all__ = ["QUARANTINE_SECONDS", "TERMINATED_POD_THRESHOLD", "TERMINATED_SWEEP", "PodGarbageCollector"]

QUARANTINE_SECONDS = 40.0  # quarantineTime
TERMINATED_POD_THRESHOLD = 12500  # kube-controller-manager's --terminated-pod-gc-threshold default
TERMINATED_SWEEP = Request("", "")
ORPHAN_CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists"}  # fmt: skip


class PodGCMetrics:
    """``DeletingPodsTotal`` and ``DeletingPodsErrorTotal``, once per registry."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, PodGCMetrics] = weakref.WeakKeyDictionary()

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("namespace", "reason")
        self.deleting = Counter("pod_gc_collector_force_delete_pods",
                                "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
                                labels, registry=registry)  # fmt: skip
        self.errors = Counter("pod_gc_collector_force_delete_pod_errors",
                              "Number of errors encountered when forcefully deleting the pods since the Pod GC "
                              "Controller started.", labels, registry=registry)  # fmt: skip

    @classmethod
    def of(cls, registry: CollectorRegistry) -> PodGCMetrics:
        found = cls._by_registry.get(registry)
        if found is None:
            found = cls._by_registry[registry] = cls(registry)
        return found


class PodGarbageCollector:
    """Force-deletes the pods no kubelet will finish. Build it on a manager before it runs and add
    :attr:`controller` (``manager.add_controller``), as :func:`~kubeloop.controllers.add_builtin_controllers`
    does; ``terminated_pod_threshold`` may be changed until then."""

    name = "pod-garbage-collector"

    def __init__(self, manager: Manager, *, quarantine: float = QUARANTINE_SECONDS,
                 terminated_pod_threshold: int = TERMINATED_POD_THRESHOLD) -> None:  # fmt: skip
        self.client = manager.client
        self.clock = manager.clock
        self.quarantine = quarantine
        self.terminated_pod_threshold = terminated_pod_threshold
        self.metrics = PodGCMetrics.of(manager.metrics.registry)
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({NODE_NAME_INDEX: node_name_of_pod, TERMINATED_INDEX: index_terminated})
        self.nodes = manager.informer(NODES)
        self._missing_since: dict[str, float] = {}  # node name -> when first seen missing (monotonic)
        self.controller = Controller(self.name, self.reconcile, clock=manager.clock, metrics=manager.metrics,
                                     watches=[Watch(self.pods, _PodEvents(self)), Watch(self.nodes, _NodeEvents())])

    async def reconcile(self, request: Request) -> Result | None:
        if request == TERMINATED_SWEEP:
            await self._gc_terminated()
            return None
        if request.namespace:
            await self._gc_unscheduled_terminating(f"{request.namespace}/{request.name}")
            return None
        node = self.nodes.cache.get_by_name(request.name)
        if node is None:
            return await self._gc_orphaned(request.name)
        self._missing_since.pop(request.name, None)
        if is_out_of_service(node):
            pods = [p for p in self.pods.cache.by_index(NODE_NAME_INDEX, request.name) if is_terminating(p)]
            await self._force_delete(sorted(pods, key=deletion_order), "out-of-service")
        return None

    # -- the steps -------------------------------------------------------------------------------

    async def _gc_terminated(self) -> None:
        if self.terminated_pod_threshold <= 0:
            return
        # Counted first: most sweeps (a pod finished) find nothing to do, and then list nothing.
        surplus = self.pods.cache.count_by_index(TERMINATED_INDEX, "true") - self.terminated_pod_threshold
        if surplus > 0:
            terminated = self.pods.cache.by_index(TERMINATED_INDEX, "true")
            await self._force_delete(sorted(terminated, key=deletion_order)[:surplus], "terminated")

    async def _gc_unscheduled_terminating(self, key: str) -> None:
        pod = self.pods.cache.get(key)
        if pod is not None and is_terminating(pod) and not node_name_of_pod(pod):
            await self._force_delete([pod], "unscheduled")

    async def _gc_orphaned(self, node_name: str) -> Result | None:
        orphans = self.pods.cache.by_index(NODE_NAME_INDEX, node_name)
        if not orphans:
            self._missing_since.pop(node_name, None)
            return None
        since = self._missing_since.setdefault(node_name, self.clock.monotonic())
        wait = since + self.quarantine - self.clock.monotonic()
        if wait > 0:
            return Result(requeue_after=wait)
        try:
            await self.client.get(NODES, node_name)
        except NotFound:
            pass
        else:
            self._missing_since.pop(node_name, None)
            return None
        await self._force_delete(orphans, "orphaned", ORPHAN_CONDITION)
        self._missing_since.pop(node_name, None)
        return None

    # -- writes ----------------------------------------------------------------------------------

    async def _force_delete(self, pods: Sequence[Mapping[str, Any]], reason: str,
                            condition: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        """Each pod failed and deleted (in parallel, as upstream's goroutines); the first error other
        than NotFound is raised once every pod was tried."""
        if not pods:
            return
        outcomes = await asyncio.gather(*(self._mark_failed_and_delete(p, condition) for p in pods),
                                        return_exceptions=True)  # fmt: skip
        first: BaseException | None = None
        for pod, outcome in zip(pods, outcomes, strict=True):
            namespace = namespace_of(pod)
            self.metrics.deleting.labels(namespace, reason).inc()
            if isinstance(outcome, BaseException):
                self.metrics.errors.labels(namespace, reason).inc()
                if not isinstance(outcome, NotFound) and first is None:
                    first = outcome
        if first is not None:
            raise first

    async def _mark_failed_and_delete(self, pod: Mapping[str, Any], condition: Mapping[str, Any] | None) -> None:
        """``markFailedAndDeletePodWithCondition``."""
        name, namespace = name_of(pod), namespace_of(pod)
        patch = failed_status_patch(pod, condition, self.clock.now())
        if patch is not None:
            await self.client.patch(PODS, name, patch, namespace=namespace, subresource="status", patch_type="strategic")
        await self.client.delete(PODS, name, namespace=namespace, grace_period_seconds=0)


class _PodEvents:
    """A pod names the steps that may now apply to it: its node's (missing, or out of service while the
    pod is being deleted), its own (being deleted, unscheduled), the terminated sweep (it finished)."""

    def __init__(self, owner: PodGarbageCollector) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            return ()
        pod, found = event.object, []
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        if node_name:
            node = self.owner.nodes.cache.get_by_name(node_name)
            if node is None or (is_terminating(pod) and is_out_of_service(node)):
                found.append(Request("", node_name))
        elif is_terminating(pod):
            found.append(Request.for_object(pod))
        old = event.old_object
        if self.owner.terminated_pod_threshold > 0 and is_terminated(pod) and (old is None or not is_terminated(old)):
            found.append(TERMINATED_SWEEP)
        return found


class _NodeEvents:
    """A deleted node names itself (its pods may be orphans), and so does one that is now out of service."""

    def requests(self, event: Event) -> Iterable[Request]:
        node, old = event.object, event.old_object
        if event.type == "delete" or (is_out_of_service(node) and (old is None or not is_out_of_service(old))):
            return (Request("", name_of(node)),)
        return ()
