"""The TTL-after-finished controller: delete a finished Job ``ttlSecondsAfterFinished`` after it finished.

Upstream: k/k ``pkg/controller/ttlafterfinished/ttlafterfinished_controller.go`` (release 1.32),
kube-controller-manager's ``ttl-after-finished`` controller:

- a Job needs cleanup when it is not being deleted, sets ``spec.ttlSecondsAfterFinished`` and has a
  Complete or Failed condition that is True; it finished at that condition's ``lastTransitionTime``
  (``jobFinishTime``; without one, nothing is deleted);
- before the TTL has passed the sync looks again exactly when it will have (on the injected clock);
- once it has, the Job is read again from the API server (the cached copy may be stale: its TTL may
  have been changed) and checked again, then deleted with ``propagationPolicy: Foreground`` and the
  Job's UID as precondition, so its pods go first and a recreated namesake is never deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound, parse_time
from kubeloop.controllers._workload_kinds import JOBS
from kubeloop.runtime import Controller, EnqueueForObject, Manager, Request, Result, Watch

__all__ = ["TTLAfterFinishedController", "ttl_expires_at"]


def _finish_time(job: Mapping[str, Any]) -> float | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            stamp = cond.get("lastTransitionTime")
            try:
                return parse_time(stamp) if isinstance(stamp, str) and stamp else None
            except ValueError:
                return None
    return None


def ttl_expires_at(job: Mapping[str, Any]) -> float | None:
    """When a Job that needs cleanup may be deleted (``None``: it does not need it, or has no finish time)."""
    meta = job.get("metadata") or {}
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if meta.get("deletionTimestamp") or not isinstance(ttl, int) or isinstance(ttl, bool):
        return None
    finished = _finish_time(job)
    return None if finished is None else finished + ttl


class TTLAfterFinishedController:
    """Deletes expired finished Jobs. Build it on a manager before it runs and add :attr:`controller`
    (``manager.add_controller``), as :func:`~kubeloop.controllers.add_builtin_controllers` does."""

    name = "ttl-after-finished"

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.jobs = manager.informer(JOBS)
        self.controller = Controller(self.name, self.reconcile, watches=[Watch(self.jobs, EnqueueForObject())],
                                     clock=manager.clock, metrics=manager.metrics)  # fmt: skip

    async def reconcile(self, request: Request) -> Result | None:
        job = self.jobs.cache.get_by_name(request.name, request.namespace)
        if job is None:
            return None
        wait = self._remaining(job)
        if wait is None or wait > 0:
            return Result(requeue_after=wait) if wait else None
        try:
            fresh = await self.client.get(JOBS, request.name, namespace=request.namespace)
        except NotFound:
            return None
        wait = self._remaining(fresh)
        if wait is None or wait > 0:
            return Result(requeue_after=wait) if wait else None
        uid = (fresh.get("metadata") or {}).get("uid")
        try:
            await self.client.delete(JOBS, request.name, namespace=request.namespace,
                                     propagation_policy="Foreground", preconditions={"uid": uid})  # fmt: skip
        except NotFound:
            pass
        return None

    def _remaining(self, job: Mapping[str, Any]) -> float | None:
        expires = ttl_expires_at(job)
        return None if expires is None else max(0.0, expires - self.clock.now())
