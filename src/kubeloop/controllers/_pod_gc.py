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

The steps run as upstream runs them: one pass over the informers' pods and nodes, the steps in
upstream's order (``gc``), right after the caches synced and then :data:`GC_CHECK_PERIOD` (20 s,
``gcCheckPeriod``) after each pass ends (``wait.UntilWithContext``), on the injected clock; nothing runs
on a pod or node event in between (upstream registers no event handlers). The quarantine of a missing
node counts from the first pass that sees it missing (``nodeQueue.AddAfter``), and the pass at or after
its end reads the node from the API server (``discoverDeletedNodes``). A force-delete that fails is
logged and counted (``utilruntime.HandleError``, the error metric); the next pass tries again.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from kubeloop.api import ApiError, NotFound, name_of, namespace_of
from kubeloop.controllers._pod_gc_rules import (
    TERMINATED_INDEX,
    deletion_order,
    failed_status_patch,
    index_terminated,
    is_out_of_service,
    is_terminating,
)
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.runtime import Controller, Event, Manager, Request, Result, Watch

__all__ = ["GC_CHECK_PERIOD", "QUARANTINE_SECONDS", "SWEEP", "TERMINATED_POD_THRESHOLD", "PodGarbageCollector"]

GC_CHECK_PERIOD = 20.0  # gcCheckPeriod
QUARANTINE_SECONDS = 40.0  # quarantineTime
TERMINATED_POD_THRESHOLD = 12500  # kube-controller-manager's --terminated-pod-gc-threshold default
SWEEP = Request("", "")  # the one request: a pass of every step
log = logging.getLogger("kubeloop.controllers.pod_gc")
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
                 terminated_pod_threshold: int = TERMINATED_POD_THRESHOLD,
                 period: float = GC_CHECK_PERIOD) -> None:  # fmt: skip
        self.client = manager.client
        self.clock = manager.clock
        self.quarantine = quarantine
        self.period = period
        self.terminated_pod_threshold = terminated_pod_threshold
        self.metrics = PodGCMetrics.of(manager.metrics.registry)
        self.pods = manager.informer(PODS)
        self.pods.add_indexers({TERMINATED_INDEX: index_terminated})
        self.nodes = manager.informer(NODES)
        self._missing_since: dict[str, float] = {}  # node name -> the pass that first saw it missing (monotonic)
        # The informers are watched only so that the first pass waits for their caches (upstream's
        # WaitForNamedCacheSync); their events name no request.
        self.controller = Controller(self.name, self.reconcile, clock=manager.clock, metrics=manager.metrics,
                                     watches=[Watch(self.pods, _NoRequests()), Watch(self.nodes, _NoRequests())])
        self.controller.enqueue(SWEEP)  # the first pass, once the caches synced

    async def reconcile(self, request: Request) -> Result:
        """One pass (``gc``), then the next one :attr:`period` after it ends."""
        await self.gc()
        return Result(requeue_after=self.period)

    async def gc(self) -> None:
        """Every step once, over the caches as they are now, in upstream's order."""
        pods = self.pods.cache.list()
        if self.terminated_pod_threshold > 0:
            await self._gc_terminated()
        await self._gc_terminating(pods)
        await self._gc_orphaned(pods)
        await self._force_delete([p for p in pods if is_terminating(p) and not _node_name(p)], "unscheduled")

    # -- the steps -------------------------------------------------------------------------------

    async def _gc_terminated(self) -> None:
        # Counted first: most passes find nothing to do, and then list nothing.
        surplus = self.pods.cache.count_by_index(TERMINATED_INDEX, "true") - self.terminated_pod_threshold
        if surplus > 0:
            terminated = self.pods.cache.by_index(TERMINATED_INDEX, "true")
            await self._force_delete(sorted(terminated, key=deletion_order)[:surplus], "terminated")

    async def _gc_terminating(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """Pods being deleted on a node that is not Ready and out of service (a pod whose node the
        informer does not have is left alone: upstream's lister Get fails and it moves on)."""
        doomed = []
        for pod in pods:
            if is_terminating(pod):
                node = self.nodes.cache.get_by_name(_node_name(pod))
                if node is not None and is_out_of_service(node):
                    doomed.append(pod)
        await self._force_delete(sorted(doomed, key=deletion_order), "out-of-service")

    async def _gc_orphaned(self, pods: Sequence[Mapping[str, Any]]) -> None:
        now = self.clock.monotonic()
        bound = {_node_name(p) for p in pods} - {""}
        for node_name in bound:
            if self.nodes.cache.get_by_name(node_name) is None:
                self._missing_since.setdefault(node_name, now)
        deleted: set[str] = set()
        for node_name, since in list(self._missing_since.items()):
            if since + self.quarantine > now:
                continue  # still in quarantine
            del self._missing_since[node_name]  # drained: a later pass that misses it starts anew
            if self.nodes.cache.get_by_name(node_name) is not None:
                continue
            try:
                await self.client.get(NODES, node_name)
            except NotFound:
                deleted.add(node_name)
            except ApiError as err:
                log.error("pod-garbage-collector: reading node %s failed: %s", node_name, err)
        if deleted:
            orphans = [p for p in pods if _node_name(p) in deleted]
            await self._force_delete(orphans, "orphaned", ORPHAN_CONDITION)

    # -- writes ----------------------------------------------------------------------------------

    async def _force_delete(self, pods: Sequence[Mapping[str, Any]], reason: str,
                            condition: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        """Each pod failed and deleted (in parallel, as upstream's goroutines); a failure is logged and
        counted (a pod already gone is counted, not logged), and the next pass tries again."""
        if not pods:
            return
        outcomes = await asyncio.gather(*(self._mark_failed_and_delete(p, condition) for p in pods),
                                        return_exceptions=True)  # fmt: skip
        for pod, outcome in zip(pods, outcomes, strict=True):
            namespace = namespace_of(pod)
            self.metrics.deleting.labels(namespace, reason).inc()
            if isinstance(outcome, BaseException):
                self.metrics.errors.labels(namespace, reason).inc()
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                if not isinstance(outcome, NotFound):
                    log.error("pod-garbage-collector: force-deleting pod %s/%s failed: %s", namespace, name_of(pod),
                              outcome)

    async def _mark_failed_and_delete(self, pod: Mapping[str, Any], condition: Mapping[str, Any] | None) -> None:
        """``markFailedAndDeletePodWithCondition``."""
        name, namespace = name_of(pod), namespace_of(pod)
        patch = failed_status_patch(pod, condition, self.clock.now())
        if patch is not None:
            await self.client.patch(PODS, name, patch, namespace=namespace, subresource="status", patch_type="strategic")
        await self.client.delete(PODS, name, namespace=namespace, grace_period_seconds=0)


def _node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


class _NoRequests:
    """Events name nothing: the pod GC runs on its period, not on changes."""

    def requests(self, event: Event) -> Iterable[Request]:
        return ()
