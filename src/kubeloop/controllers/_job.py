"""The Job controller: run a Job's pods to completion, count them exactly once, and finish the Job.

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32, JobPodReplacementPolicy and
JobManagedBy on, so terminal conditions are delayed). One sync:

1. Read the Job from the cache (gone: forget its expectations; one whose ``spec.managedBy`` names
   another controller is left alone). Claim its pods by selector and
   controller reference (:mod:`._workload_claim`). A finished Job (Complete or Failed) only has the
   ``batch.kubernetes.io/job-tracking`` finalizer taken off its pods.
2. ``status.startTime`` is set when first seen unsuspended. The Job is finishing when it already
   shows FailureTarget or SuccessCriteriaMet; when more pods failed than ``backoffLimit`` (or, with
   restartPolicy OnFailure, containers restarted that often) it gets FailureTarget
   ``BackoffLimitExceeded``; past ``activeDeadlineSeconds`` FailureTarget ``DeadlineExceeded``. A
   finishing Job's active pods are deleted (finalizers kept: they count as failed).
3. Otherwise, with the expectations satisfied: a suspended Job's active pods are deleted; else pods are
   created up to ``min(parallelism, completions - succeeded)`` (a work queue without completions stops
   creating after its first success), each with the tracking finalizer and a controller reference, in
   slow-start batches, but only once the failure backoff (10 s doubling to 10 minutes after the last
   failure, injected clock) has passed; extra pods are deleted. An Indexed Job runs one pod per index
   not yet succeeded, lowest first (:mod:`._job_indexes`), and counts succeeded indexes in
   ``status.completedIndexes``. Enough successes with no pod active
   gives SuccessCriteriaMet ``CompletionsReached``. The Suspended condition follows ``spec.suspend``
   (a resumed Job's startTime restarts).
4. Status, as ``trackJobStatusAndRemoveFinalizers``: finished pods still carrying the finalizer are
   added to ``status.uncountedTerminatedPods`` (written first), then their finalizers removed, then
   moved into ``succeeded``/``failed``; ``active``, ``ready`` and ``terminating`` from the pods. Once no
   pod is uncounted or terminating, FailureTarget becomes Failed and SuccessCriteriaMet becomes Complete
   (with ``completionTime``), and the Job's Event is recorded (``Completed``, or the failure's reason).

Writes are conditional on the cached resourceVersion, so a sync on a stale Job fails with a conflict
and is retried rather than counting from an old status. Pods whose finalizer this controller removed
are skipped until the cache shows it gone (upstream's finalizer expectations). Pods of a Job that no
longer exists lose the finalizer too, so the garbage collector can finish deleting them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Unpack

from kubeloop.api import (
    ApiError,
    NotFound,
    controller_of,
    copy_json,
    format_time,
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    parse_time,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.controllers._job_indexes import completion_index, format_indexes, indexed_pod, parse_indexes
from kubeloop.controllers._job_pods import (
    JOB_TRACKING_FINALIZER,
    BackoffRecord,
    condition_true,
    ensure_condition,
    has_tracking_finalizer,
    is_pod_failed,
    is_terminating,
    new_condition,
    past_backoff_limit_on_failure,
)
from kubeloop.controllers._workload_base import WorkloadController, WorkloadOptions
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    owners_selecting,
)
from kubeloop.controllers._workload_expectations import Expectations
from kubeloop.controllers._workload_kinds import JOBS, PODS, int_field
from kubeloop.controllers._workload_pods import (
    deletion_order,
    is_pod_active,
    is_pod_ready,
    pod_from_template,
    slow_start_batch,
)
from kubeloop.runtime import Event, InformerFactory, Request, Result, SharedInformer, Watch, object_key

__all__ = ["JOB_CONTROLLER_NAME", "MAX_POD_CREATE_DELETE_PER_SYNC", "JobController"]

log = logging.getLogger("kubeloop.controllers.job")

MAX_POD_CREATE_DELETE_PER_SYNC = 500
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # the managedBy value this controller answers to
_REMOVE_FINALIZER = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}
_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
_DEADLINE_MESSAGE = "Job was active longer than specified deadline"
_COMPLETIONS_MESSAGE = "Reached expected number of succeeded pods"


def _finished(job: Mapping[str, Any]) -> bool:
    status = job.get("status") or {}
    return condition_true(status, "Complete") or condition_true(status, "Failed")


def _target(status: Mapping[str, Any]) -> dict[str, Any] | None:
    """The interim condition a finishing Job already shows (FailureTarget first)."""
    for kind in ("FailureTarget", "SuccessCriteriaMet"):
        for cond in status.get("conditions") or ():
            if cond.get("type") == kind and cond.get("status") == "True":
                return dict(cond)
    return None


class JobController(WorkloadController):
    """Reconciles Jobs; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "job"
    kind = "Job"
    api_version = "batch/v1"
    resource = JOBS

    def __init__(self, client: Client, informers: InformerFactory, **options: Unpack[WorkloadOptions]) -> None:
        super().__init__(client, informers, **options)
        self.expectations = Expectations(self.clock)
        self.backoff: dict[str, BackoffRecord] = {}  # by Job UID
        self.removing: dict[str, set[str]] = {}  # Job key -> pod UIDs whose finalizer we removed

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.jobs: SharedInformer = informers.informer(JOBS)
        self.pods: SharedInformer = add_orphan_index(informers.informer(PODS))
        return [Watch(self.jobs, _JobEvents(self)), Watch(self.pods, _PodEvents(self))]

    # -- reconcile -------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        cached = self.jobs.cache.get(key)
        if cached is None:
            self.expectations.delete(key)
            self.removing.pop(key, None)
            await self._release_orphans(request.namespace)
            return None
        if (cached.get("spec") or {}).get("managedBy") not in (None, JOB_CONTROLLER_NAME):
            return None  # another controller's Job (JobManagedBy, beta and on in 1.32)
        job = copy_json(cached)
        selector = label_selector_from_dict((job.get("spec") or {}).get("selector"))
        pods = await claim_children(
            self.client, owner=job, owner_resource=JOBS, child_resource=PODS, children=candidates(self.pods.cache, job),
            matches=lambda p: selector.matches(labels_of(p)), field_manager=self.field_manager,
        )  # fmt: skip
        if _finished(job):
            _, error = await self._remove_finalizers(key, [p for p in pods if has_tracking_finalizer(p)])
            if error is not None:
                raise error
            return None
        return await _Sync(self, key, job, pods).run()

    async def _release_orphans(self, namespace: str) -> None:
        """Pods with the tracking finalizer whose Job is gone (``syncOrphanPod``): finalizer off."""
        for pod in self.pods.cache.list(namespace=namespace):
            ref = controller_of(pod)
            if not has_tracking_finalizer(pod) or (ref is not None and ref.get("kind") != "Job"):
                continue
            if ref is not None and self._job_by_uid(namespace, str(ref.get("uid"))) is not None:
                continue
            await self._patch_finalizer(pod)

    def _job_by_uid(self, namespace: str, uid: str) -> Mapping[str, Any] | None:
        for job in self.jobs.cache.list(namespace=namespace):
            if uid_of(job) == uid:
                return job
        return None

    async def _patch_finalizer(self, pod: Mapping[str, Any]) -> None:
        """``removeTrackingFinalizerPatch``: a strategic merge patch deleting our finalizer (a pod that is
        gone needs nothing more)."""
        with contextlib.suppress(NotFound):
            await self.client.patch(PODS, name_of(pod), _REMOVE_FINALIZER, namespace=namespace_of(pod),
                                    patch_type="strategic", field_manager=self.field_manager)  # fmt: skip

    async def _remove_finalizers(self, key: str, pods: list[Mapping[str, Any]]) -> tuple[set[str], BaseException | None]:
        """Take the tracking finalizer off ``pods``: the UIDs it is now off (or gone), and the first error
        of the patches that failed (raised by the sync once it has recorded what did come off)."""
        if not pods:
            return set(), None
        expected = self.removing.setdefault(key, set())
        expected.update(uid_of(p) for p in pods)
        results = await asyncio.gather(*(self._patch_finalizer(p) for p in pods), return_exceptions=True)
        done: set[str] = set()
        first: BaseException | None = None
        for pod, outcome in zip(pods, results, strict=True):
            if isinstance(outcome, BaseException):
                expected.discard(uid_of(pod))
                first = first or outcome
            else:
                done.add(uid_of(pod))
        return done, first

    # -- pods ------------------------------------------------------------------------------------

    async def create_pods(self, key: str, job: dict[str, Any], count: int, indexes: list[int] | None = None) -> None:
        """Create ``count`` pods (one per entry of ``indexes`` for an Indexed Job, lowest first)."""
        self.expectations.expect_creations(key, count)
        template = (job.get("spec") or {}).get("template") or {}
        ref = owner_reference(job, controller=True, block_owner_deletion=True)
        pod = pod_from_template(template, namespace=namespace_of(job), generate_name=f"{name_of(job)}-", owner_ref=ref)
        finalizers = pod["metadata"].setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        pending = list(indexes or [])

        async def create() -> None:
            body = copy_json(pod)
            if indexes is not None:
                body = indexed_pod(body, job_name=name_of(job), index=pending.pop(0))
            try:
                made = await self.client.create(PODS, body, namespace=namespace_of(job),
                                                field_manager=self.field_manager)  # fmt: skip
            except ApiError as err:
                self.event(job, "Warning", "FailedCreate", f"Error creating: {err.message or err}")
                raise
            self.event(job, "Normal", "SuccessfulCreate", f"Created pod: {name_of(made)}")

        created, error = await slow_start_batch(count, create)
        for _ in range(count - created):
            self.expectations.creation_observed(key)
        if error is not None:
            raise error

    async def delete_pods(self, key: str, job: Mapping[str, Any], pods: list[Mapping[str, Any]], *,
                          keep_finalizers: bool) -> int:
        """Delete ``pods``; unless ``keep_finalizers`` their finalizer goes first, so they are not
        counted as failures (``deleteJobPods``; a finishing Job's pods keep it: ``deleteActivePods``)."""
        if not pods:
            return 0
        self.expectations.expect_deletions(key, [object_key(p) for p in pods])

        async def delete(pod: Mapping[str, Any]) -> None:
            if not keep_finalizers and has_tracking_finalizer(pod):
                await self._patch_finalizer(pod)
            try:
                await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod))
            except NotFound:
                raise
            except ApiError as err:
                self.event(job, "Warning", "FailedDelete", f"Error deleting: {err.message or err}")
                raise
            self.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

        results = await asyncio.gather(*(delete(p) for p in pods), return_exceptions=True)
        deleted = 0
        first: BaseException | None = None
        for pod, outcome in zip(pods, results, strict=True):
            if isinstance(outcome, BaseException):
                self.expectations.deletion_observed(key, object_key(pod))
                if not isinstance(outcome, NotFound):
                    first = first or outcome
                    continue
            deleted += 1
        if first is not None:
            raise first
        return deleted

    def resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.jobs.cache.get(f"{namespace}/{ref.get('name')}")
        return job if job is not None and uid_of(job) == ref.get("uid") else None


class _Sync:
    """One sync of one Job (``syncJob``): the counts it reads once, the status it builds and writes."""

    def __init__(self, owner: JobController, key: str, job: dict[str, Any], pods: list[Mapping[str, Any]]) -> None:
        self.owner, self.key, self.job = owner, key, job
        skip = owner.removing.get(key, set())
        self.all_pods = pods
        self.pods = [p for p in pods if uid_of(p) not in skip]
        self.now = owner.clock.now()
        self.spec: Mapping[str, Any] = job.get("spec") or {}
        status = job.setdefault("status", {})
        if not isinstance(status.get("uncountedTerminatedPods"), dict):
            status["uncountedTerminatedPods"] = {}
        self.status: dict[str, Any] = status
        uncounted = status["uncountedTerminatedPods"]
        self.uncounted_succeeded: list[str] = list(uncounted.get("succeeded") or [])
        self.uncounted_failed: list[str] = list(uncounted.get("failed") or [])
        counted = set(self.uncounted_succeeded) | set(self.uncounted_failed)
        self.new_succeeded = [p for p in self.pods if has_tracking_finalizer(p) and uid_of(p) not in counted
                              and (p.get("status") or {}).get("phase") == "Succeeded"]
        self.new_failed = [p for p in self.pods if has_tracking_finalizer(p) and uid_of(p) not in counted
                           and (p.get("status") or {}).get("phase") != "Succeeded" and is_pod_failed(p, job)]
        self.active_pods = [p for p in self.pods if is_pod_active(p)]
        self.succeeded = int_field(status, "succeeded") + len(self.uncounted_succeeded) + len(self.new_succeeded)
        # An Indexed Job counts succeeded indexes (status.completedIndexes), not pods.
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.completions = int_field(self.spec, "completions")
        self.completed: set[int] = set()
        if self.indexed:
            self.completed = parse_indexes(status.get("completedIndexes"), self.completions)
            self.completed |= {ix for p in self.new_succeeded if (ix := completion_index(p)) is not None
                               and ix < self.completions}
            self.succeeded = len(self.completed)
        self.failed = int_field(status, "failed") + len(self.uncounted_failed) + len(self.new_failed)
        self.suspended = self.spec.get("suspend") is True
        self.requeue: float | None = None

    async def run(self) -> Result | None:
        owner, job, status = self.owner, self.job, self.status
        record = owner.backoff.get(uid_of(job), BackoffRecord()).updated(self.new_succeeded, self.new_failed, self.now)
        owner.backoff[uid_of(job)] = record
        if status.get("startTime") is None and not self.suspended:
            status["startTime"] = format_time(self.now)
        active = len(self.active_pods)
        finishing = self._finishing_condition()
        manage_error: BaseException | None = None
        changed = False
        if finishing is not None:
            try:
                active -= await owner.delete_pods(self.key, job, self.active_pods, keep_finalizers=True)
            except ApiError as err:
                manage_error = err
        else:
            managed = False
            if owner.expectations.satisfied(self.key) and not is_being_deleted(job):
                managed = True
                try:
                    active = await self._manage(active, record)
                except ApiError as err:
                    manage_error = err
            completions = self.spec.get("completions")
            complete = (self.succeeded > 0 if completions is None else self.succeeded >= int(completions)) and active == 0
            if complete:
                finishing = new_condition("SuccessCriteriaMet", "True", "CompletionsReached", _COMPLETIONS_MESSAGE, self.now)
            elif managed:
                changed = self._suspend_condition()
        ready = sum(1 for p in self.active_pods if is_pod_ready(p)) if active else 0
        terminating = sum(1 for p in self.all_pods if is_terminating(p))
        if (active, ready, terminating) != (status.get("active", 0), status.get("ready"), status.get("terminating")):
            changed = True
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
        status["ready"], status["terminating"] = ready, terminating
        await self._track(finishing, terminating, changed)
        if manage_error is not None:
            raise manage_error
        return Result(requeue_after=self.requeue) if self.requeue else None

    def _finishing_condition(self) -> dict[str, Any] | None:
        existing = _target(self.status)
        if existing is not None:
            return existing
        spec = self.spec
        if self.failed > int_field(spec, "backoffLimit", 6) or past_backoff_limit_on_failure(self.job, self.pods):
            return new_condition("FailureTarget", "True", "BackoffLimitExceeded", _BACKOFF_MESSAGE, self.now)
        deadline = spec.get("activeDeadlineSeconds")
        start = self.status.get("startTime")
        if isinstance(deadline, int) and isinstance(start, str) and not self.suspended:
            remaining = deadline - (self.now - parse_time(start))
            if remaining <= 0:
                return new_condition("FailureTarget", "True", "DeadlineExceeded", _DEADLINE_MESSAGE, self.now)
            self._after(remaining)
        return None

    def _after(self, seconds: float) -> None:
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)

    async def _manage(self, active: int, record: BackoffRecord) -> int:
        """``manageJob``: the number of active pods after its writes."""
        owner, job, spec = self.owner, self.job, self.spec
        if self.suspended:
            doomed = deletion_order(self.active_pods, now=self.now)
            return active - await owner.delete_pods(self.key, job, doomed, keep_finalizers=False)
        parallelism = int_field(spec, "parallelism", 1)
        completions = spec.get("completions")
        if self.indexed:
            return await self._manage_indexed(active, record, parallelism)
        if completions is None:
            want = active if self.succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - self.succeeded, parallelism))
        if active > want:
            doomed = deletion_order(self.active_pods, now=self.now)[: active - want]
            return active - await owner.delete_pods(self.key, job, doomed, keep_finalizers=False)
        if active < want:
            wait = record.remaining(self.now)
            if wait > 0:
                self._after(wait)
                return active
            count = min(want - active, MAX_POD_CREATE_DELETE_PER_SYNC)
            await owner.create_pods(self.key, job, count)
            return active + count
        return active

    async def _manage_indexed(self, active: int, record: BackoffRecord, parallelism: int) -> int:
        """``manageJob`` for an Indexed Job: one active pod per index still to succeed, lowest first;
        pods of a succeeded, unknown or repeated index go (``appendDuplicatedIndexPodsForRemoval``)."""
        owner, job = self.owner, self.job
        by_index: dict[int, Mapping[str, Any]] = {}
        doomed: list[Mapping[str, Any]] = []
        for pod in sorted(self.active_pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp"))):
            ix = completion_index(pod)
            if ix is None or ix >= self.completions or ix in self.completed or ix in by_index:
                doomed.append(pod)
            else:
                by_index[ix] = pod
        want = max(0, min(self.completions - self.succeeded, parallelism))
        extra = len(by_index) - want
        if extra > 0:
            doomed += [by_index.pop(ix) for ix in sorted(by_index, reverse=True)[:extra]]
        if doomed:
            return active - await owner.delete_pods(self.key, job, doomed, keep_finalizers=False)
        if len(by_index) < want:
            wait = record.remaining(self.now)
            if wait > 0:
                self._after(wait)
                return active
            count = min(want - len(by_index), MAX_POD_CREATE_DELETE_PER_SYNC)
            pending = [ix for ix in range(self.completions) if ix not in self.completed and ix not in by_index]
            await owner.create_pods(self.key, job, count, pending[:count])
            return active + count
        return active

    def _suspend_condition(self) -> bool:
        conditions: list[dict[str, Any]] = self.status.setdefault("conditions", [])
        if self.suspended:
            changed = ensure_condition(conditions, "Suspended", "True", "JobSuspended", "Job suspended", self.now)
            if changed:
                self.owner.event(self.job, "Normal", "Suspended", "Job suspended")
        else:
            changed = ensure_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed", self.now)
            if changed:
                self.owner.event(self.job, "Normal", "Resumed", "Job resumed")
                # A resumed Job's activeDeadlineSeconds counts from now.
                self.status["startTime"] = format_time(self.now)
        if not conditions:
            del self.status["conditions"]
        return changed

    async def _track(self, finishing: dict[str, Any] | None, terminating: int, changed: bool) -> None:
        """``trackJobStatusAndRemoveFinalizers``: uncounted first, finalizers off, then the counters."""
        owner, status = self.owner, self.status
        flush = changed
        if self.indexed:
            # Succeeded pods of an Indexed Job are recorded as completed indexes, not as uncounted UIDs.
            succeeded_uids = list(self.uncounted_succeeded)
            completed = format_indexes(self.completed)
            if completed != (status.get("completedIndexes") or ""):
                status["completedIndexes"] = completed
                flush = True
            if self.succeeded != int_field(status, "succeeded"):
                status["succeeded"] = self.succeeded
                flush = True
        else:
            succeeded_uids = self.uncounted_succeeded + [uid_of(p) for p in self.new_succeeded]
        failed_uids = self.uncounted_failed + [uid_of(p) for p in self.new_failed]
        if self.new_succeeded or self.new_failed:
            flush = True
        final: dict[str, Any] | None = None
        if finishing is not None:
            conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
            if not any(c.get("type") == finishing["type"] for c in conditions):
                conditions.append(finishing)
                flush = True
            final_type = "Failed" if finishing["type"] == "FailureTarget" else "Complete"
            final = new_condition(final_type, "True", str(finishing.get("reason") or ""),
                                  str(finishing.get("message") or ""), self.now)
        status["uncountedTerminatedPods"] = _uncounted(succeeded_uids, failed_uids)
        if flush:
            await self._write()
        to_release = [p for p in self.pods if has_tracking_finalizer(p)
                      and (uid_of(p) in succeeded_uids or uid_of(p) in failed_uids)]
        if self.indexed:
            to_release += self.new_succeeded
        # cleanUncountedPodsWithoutFinalizers: an uncounted pod whose finalizer is off (or on its way
        # off, or which is gone) is counted now; one that still has it waits for the next sync.
        with_finalizer = {uid_of(p) for p in self.pods if has_tracking_finalizer(p)}
        released, removal_error = await owner._remove_finalizers(self.key, to_release)
        with_finalizer -= released
        moved_succeeded = [u for u in succeeded_uids if u not in with_finalizer]
        moved_failed = [u for u in failed_uids if u not in with_finalizer]
        flush = False
        if moved_succeeded or moved_failed:
            status["succeeded"] = int_field(status, "succeeded") + len(moved_succeeded)
            status["failed"] = int_field(status, "failed") + len(moved_failed)
            for key in ("succeeded", "failed"):
                if not status[key]:
                    del status[key]
            status["uncountedTerminatedPods"] = _uncounted([u for u in succeeded_uids if u in with_finalizer],
                                                           [u for u in failed_uids if u in with_finalizer])
            flush = True
        finished = False
        uncounted = status["uncountedTerminatedPods"]
        if final is not None and not uncounted and terminating == 0:
            conditions = status.setdefault("conditions", [])
            ensure_condition(conditions, final["type"], "True", final["reason"], final["message"], self.now)
            if final["type"] == "Complete":
                status["completionTime"] = format_time(self.now)
            flush = finished = True
        if flush:
            await self._write()
        if finished and final is not None:
            if final["type"] == "Complete":
                owner.event(self.job, "Normal", "Completed", "Job completed")
            else:
                owner.event(self.job, "Warning", final["reason"], final["message"])
        if removal_error is not None:
            raise removal_error

    async def _write(self) -> None:
        await self.owner.put_status(self.job, self.status)
        self.status = self.job.setdefault("status", {})
        if not isinstance(self.status.get("uncountedTerminatedPods"), dict):
            self.status["uncountedTerminatedPods"] = {}


def _uncounted(succeeded: list[str], failed: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if succeeded:
        out["succeeded"] = succeeded
    if failed:
        out["failed"] = failed
    return out


class _JobEvents:
    def __init__(self, owner: JobController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            self.owner.expectations.delete(object_key(event.object))
            self.owner.backoff.pop(uid_of(event.object), None)
        return (Request.for_object(event.object),)


class _PodEvents:
    """Pod events -> expectations observed and the Jobs to sync (``addPod``/``updatePod``/``deletePod``)."""

    def __init__(self, owner: JobController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        pod = event.object
        ref = controller_of(pod)
        namespace = namespace_of(pod)
        job = self.owner.resolve(namespace, ref)
        if job is None:
            if ref is None:
                return owners_selecting(self.owner.jobs.cache, pod) if event.type != "delete" else []
            if ref.get("kind") == "Job" and has_tracking_finalizer(pod) and event.type != "delete":
                # An orphan with our finalizer: the sync of its (gone) Job releases it.
                return [Request(namespace, str(ref.get("name")))]
            return []
        key = object_key(job)
        removing = self.owner.removing.get(key)
        if removing is not None and (event.type == "delete" or not has_tracking_finalizer(pod)):
            removing.discard(uid_of(pod))
        if event.type == "create" and not is_being_deleted(pod):
            self.owner.expectations.creation_observed(key)
        elif event.type == "delete" or is_being_deleted(pod):
            self.owner.expectations.deletion_observed(key, object_key(pod))
        return [Request.for_object(job)]
