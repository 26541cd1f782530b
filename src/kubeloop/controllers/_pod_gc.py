"""The pod garbage collector, orphaned pods only: pods bound to a node that no longer exists go.

Upstream: k/k ``pkg/controller/podgc/gc_controller.go`` (release 1.32), kube-controller-manager's
``pod-garbage-collector`` controller, its ``gcOrphaned`` step:

- a node that pods are bound to (``spec.nodeName``) but that the node informer does not have is put in
  quarantine for 40 s (``quarantineTime``), so a node that is being (re)registered is not mistaken for
  a deleted one;
- after the quarantine the node is read from the API server; only a 404 makes its pods orphans;
- each orphan that has not finished is first patched to ``phase: Failed`` with the condition
  ``DisruptionTarget`` (``reason: DeletionByPodGC``, ``message: PodGC: node no longer exists``), the
  pod's UID as precondition (``markFailedAndDeletePodWithCondition``), then deleted with a grace period
  of 0, since no kubelet will ever confirm its containers stopped.

Upstream runs the steps every 20 s over every pod; here pods and nodes are watched and one request
per missing node name is reconciled (level-based: the pods bound to that name now), looking again
when its quarantine ends. Upstream's other steps (terminated pods past
``--terminated-pod-gc-threshold``, terminating pods on ``out-of-service`` nodes, unscheduled
terminating pods) are not run. Time is the injected clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import NotFound, format_time, name_of, namespace_of, uid_of
from kubeloop.controllers._scheduler_resources import NODES, PODS
from kubeloop.runtime import Controller, Event, Manager, Request, Result, Watch

__all__ = ["QUARANTINE_SECONDS", "PodGarbageCollector"]

QUARANTINE_SECONDS = 40.0


def _node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


class PodGarbageCollector:
    """Deletes pods bound to deleted nodes. Build it on a manager before it runs and add :attr:`controller`
    (``manager.add_controller``), as :func:`~kubeloop.controllers.add_builtin_controllers` does."""

    name = "pod-garbage-collector"

    def __init__(self, manager: Manager, *, quarantine: float = QUARANTINE_SECONDS) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.quarantine = quarantine
        self.pods = manager.informer(PODS)
        self.nodes = manager.informer(NODES)
        self._missing_since: dict[str, float] = {}  # node name -> when first seen missing (monotonic)
        self.controller = Controller(self.name, self.reconcile, clock=manager.clock, metrics=manager.metrics,
                                     watches=[Watch(self.pods, _PodNodes(self)), Watch(self.nodes, _DeletedNodes())])

    def _bound_to(self, node_name: str) -> list[dict[str, Any]]:
        return [p for p in self.pods.cache.list() if _node_name(p) == node_name]

    async def reconcile(self, request: Request) -> Result | None:
        node_name = request.name
        orphans = self._bound_to(node_name)
        if not orphans or self.nodes.cache.get_by_name(node_name) is not None:
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
        for pod in orphans:
            await self._mark_failed_and_delete(pod)
        self._missing_since.pop(node_name, None)
        return None

    async def _mark_failed_and_delete(self, pod: Mapping[str, Any]) -> None:
        status = pod.get("status") or {}
        try:
            if status.get("phase") not in ("Succeeded", "Failed"):
                condition = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                             "message": "PodGC: node no longer exists", "lastTransitionTime": format_time(self.clock.now())}
                conditions = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
                patch = {"metadata": {"uid": uid_of(pod)}, "status": {"phase": "Failed",
                                                                      "conditions": [*conditions, condition]}}
                await self.client.patch(PODS, name_of(pod), patch, namespace=namespace_of(pod), subresource="status",
                                        patch_type="merge")
            await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod), grace_period_seconds=0)
        except NotFound:
            return


class _PodNodes:
    """A pod bound to a node the cache does not have names that node."""

    def __init__(self, owner: PodGarbageCollector) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            return ()
        node = _node_name(event.object)
        if node and self.owner.nodes.cache.get_by_name(node) is None:
            return (Request("", node),)
        return ()


class _DeletedNodes:
    def requests(self, event: Event) -> Iterable[Request]:
        return (Request("", name_of(event.object)),) if event.type == "delete" else ()
