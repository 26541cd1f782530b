"""The Job controller: run a Job's pods to completion, count them exactly once, and finish the Job.

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32, JobPodReplacementPolicy and
JobManagedBy on, so terminal conditions are delayed). One sync:

1. Read the Job from the cache (gone: forget its expectations; one whose ``spec.managedBy`` names
   another controller is left alone). Claim its pods by selector and
   controller reference (:mod:`._workload_claim`). A finished Job (Complete or Failed) only has the
   ``batch.kubernetes.io/job-tracking`` finalizer taken off its pods.
2. ``status.startTime`` is set when first seen unsuspended. The Job is finishing when it already
   shows FailureTarget or SuccessCriteriaMet; when a failed pod matches a FailJob rule of its
   ``podFailurePolicy`` (FailureTarget ``PodFailurePolicy``; an Ignore rule's pods are not counted);
   when more pods failed than ``backoffLimit`` (or, with
   restartPolicy OnFailure, containers restarted that often) it gets FailureTarget
   ``BackoffLimitExceeded``; past ``activeDeadlineSeconds`` FailureTarget ``DeadlineExceeded``. An
   Indexed Job with ``backoffLimitPerIndex`` (:mod:`._job_index_failures`) gets FailureTarget
   ``MaxFailedIndexesExceeded`` with more failed indexes than ``maxFailedIndexes``, or ``FailedIndexes``
   once every index has succeeded or failed and one failed; an Indexed Job whose ``successPolicy`` has a
   rule met gets SuccessCriteriaMet ``SuccessPolicy`` (:mod:`._job_success_policy`). A finishing Job's
   active pods are deleted with their finalizers kept (for a failing Job every pod not yet terminated
   counts as failed; pods a success policy stops are not counted) and count as terminating; a delete
   that fails leaves the Job unfinished for this sync.
3. Otherwise, with the expectations satisfied: a suspended Job's active pods are deleted; else pods are
   created up to ``min(parallelism, completions - succeeded)`` (a work queue without completions stops
   creating after its first success), each with the tracking finalizer and a controller reference, in
   slow-start batches, but only once the failure backoff (10 s doubling to 10 minutes after the last
   failure, injected clock) has passed; extra pods are deleted. An Indexed Job runs one pod per index
   not yet succeeded (nor failed), lowest first (:mod:`._job_indexes`), and counts succeeded indexes in
   ``status.completedIndexes``; with ``backoffLimitPerIndex`` each index backs off alone, its pods carry
   the index's failure counts, a failed pod stays uncounted (finalizer on) until its replacement
   exists, and failed indexes go to ``status.failedIndexes``. Enough successes with no pod active
   gives SuccessCriteriaMet ``CompletionsReached``. The Suspended condition follows ``spec.suspend``
   (a resumed Job's startTime restarts).
4. Status, as ``trackJobStatusAndRemoveFinalizers``: finished pods still carrying the finalizer are
   added to ``status.uncountedTerminatedPods`` (written first), then their finalizers removed, then
   moved into ``succeeded``/``failed``; ``active``, ``ready`` and ``terminating`` from the pods. Once no
   pod is uncounted or terminating, FailureTarget becomes Failed and SuccessCriteriaMet becomes Complete
   (with ``completionTime``), and the Job's Event is recorded (``Completed``, or the failure's reason).

Writes are conditional on the cached resourceVersion, so a sync on a stale Job fails with a conflict
and is retried rather than counting from an old status. Pods whose finalizer this controller removed
are skipped until the cache shows it gone (upstream's finalizer expectations). Steps 2 to 4 are one
:class:`._job_sync.JobSync`; this module holds the controller's wiring, its pod writes and its event
handlers.

When a Job is synced (``enqueueSyncJobBatched`` / ``enqueueSyncJobImmediately``): pod events, and
Job updates that leave ``metadata.generation`` alone (its status writes), sync it
:data:`SYNC_JOB_BATCH_PERIOD` (1 s, ``syncJobBatchPeriod``) later on the injected clock, through the
queue's ``add_after``, which keeps the earliest due time, so the events of that second share one
sync; a Job created, deleted or with a new spec is synced at once.

Orphan pods (``syncOrphanPod``) have a queue of their own, keyed by pod (:attr:`JobController.orphans`,
``job-orphan-pod``; run it beside :attr:`controller`, see :meth:`extra_controllers`): a pod with the
tracking finalizer and no controller reference (``addPod``/``updatePod``), one being deleted whose
Job is gone or finished (``deletePod``), and a deleted or finished Job's pods
(``cleanupPodFinalizers``) go there, and the finalizer comes off unless the pod is (again)
controlled by something other than a ``batch/v1`` Job, by a Job another controller manages, or by a
live unfinished Job. The garbage collector can then finish deleting them.
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
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.controllers._job_indexes import indexed_pod
from kubeloop.controllers._job_pods import (
    JOB_TRACKING_FINALIZER,
    BackoffRecord,
    condition_true,
    has_tracking_finalizer,
)
from kubeloop.controllers._job_sync import MAX_POD_CREATE_DELETE_PER_SYNC, JobSync
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.controllers._workload_base import WorkloadController, WorkloadOptions
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    owners_selecting,
)
from kubeloop.controllers._workload_expectations import Expectations
from kubeloop.controllers._workload_kinds import JOBS, PODS
from kubeloop.controllers._workload_pods import (
    pod_from_template,
    slow_start_batch,
)
from kubeloop.runtime import (
    OWNER_UID_INDEX,
    Controller,
    Event,
    InformerFactory,
    Request,
    Result,
    SharedInformer,
    Watch,
    object_key,
)

__all__ = ["JOB_CONTROLLER_NAME", "MAX_POD_CREATE_DELETE_PER_SYNC", "SYNC_JOB_BATCH_PERIOD", "JobController"]

log = logging.getLogger("kubeloop.controllers.job")

JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # the managedBy value this controller answers to
# syncJobBatchPeriod: pod events and status-only Job updates wait this long (injected clock) for a sync.
SYNC_JOB_BATCH_PERIOD = 1.0
_REMOVE_FINALIZER = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}


def _finished(job: Mapping[str, Any]) -> bool:
    status = job.get("status") or {}
    return condition_true(status, "Complete") or condition_true(status, "Failed")


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
        self.sync_batch_period = SYNC_JOB_BATCH_PERIOD
        # The orphan worker (upstream's orphanQueue and orphanWorker): one pod at a time.
        self.orphans = Controller("job-orphan-pod", self.sync_orphan_pod, clock=self.clock,
                                  metrics=options.get("metrics"))

    def extra_controllers(self) -> list[Controller]:
        return [self.orphans]

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
        return await JobSync(self, key, job, pods).run()

    async def sync_orphan_pod(self, request: Request) -> Result | None:
        """``syncOrphanPod``: take the tracking finalizer off a pod no Job will count any more.

        A pod still controlled by something other than a ``batch/v1`` Job, by a Job another
        controller manages, or by a live unfinished Job (it was adopted meanwhile) keeps it."""
        pod = self.pods.cache.get(f"{request.namespace}/{request.name}")
        if pod is None or not has_tracking_finalizer(pod):
            return None
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return None
            job = self.resolve(request.namespace, ref)
            if job is not None and (job.get("spec") or {}).get("managedBy") not in (None, JOB_CONTROLLER_NAME):
                return None
            if job is not None and not _finished(job):
                return None
        await self._patch_finalizer(pod)
        return None

    def enqueue_orphan_pod(self, pod: Mapping[str, Any]) -> None:
        """``enqueueOrphanPod``: the orphan worker looks at the pod (its own queue, keyed by pod)."""
        self.orphans.enqueue(Request.for_object(pod))

    def cleanup_pod_finalizers(self, job: Mapping[str, Any]) -> None:
        """``cleanupPodFinalizers``: a deleted (or finished) Job's pods still carrying the finalizer go
        to the orphan worker."""
        for pod in self.pods.cache.by_index(OWNER_UID_INDEX, uid_of(job)):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") == uid_of(job) and has_tracking_finalizer(pod):
                self.enqueue_orphan_pod(pod)

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

    async def create_pods(self, key: str, job: dict[str, Any], count: int, indexes: list[int] | None = None,
                          annotations: Mapping[int, Mapping[str, str]] | None = None) -> None:
        """Create ``count`` pods (one per entry of ``indexes`` for an Indexed Job, lowest first, each with
        the ``annotations`` of its index on top of the template's)."""
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
                index = pending.pop(0)
                body = indexed_pod(body, job_name=name_of(job), index=index)
                body["metadata"]["annotations"].update((annotations or {}).get(index) or {})
            try:
                made = await self.client.create(PODS, body, namespace=namespace_of(job),
                                                field_manager=self.field_manager)  # fmt: skip
            except ApiError as err:
                if is_namespace_terminating_error(err):
                    # manageJob: every later create would fail too, so this one counts as done: no
                    # error, no Event (RealPodControl.createPods); its expectation stays until it expires, as
                    # upstream's (no new attempt before then).
                    return
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

    def enqueue_batched(self, job: Mapping[str, Any]) -> None:
        """``enqueueSyncJobBatched``: sync the Job ``sync_batch_period`` from now, or sooner when a sync is
        already due (the queue keeps the earlier time), so the events of that second share one sync."""
        self.controller.queue.add_after(Request.for_object(job), self.sync_batch_period)

    def resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.jobs.cache.get(f"{namespace}/{ref.get('name')}")
        return job if job is not None and uid_of(job) == ref.get("uid") else None


def _generation(job: Mapping[str, Any]) -> object:
    return (job.get("metadata") or {}).get("generation")


class _JobEvents:
    """Job events -> the Job's sync: at once for a create, a delete or a spec change, batched for an
    update that leaves the generation alone (a status write, labels: ``addJob``/``deleteJob`` use
    ``enqueueSyncJobImmediately``, ``updateJob`` one or the other by generation)."""

    def __init__(self, owner: JobController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            self.owner.expectations.delete(object_key(event.object))
            self.owner.backoff.pop(uid_of(event.object), None)
            self.owner.cleanup_pod_finalizers(event.object)
        elif event.type == "update" and _finished(event.object):
            self.owner.cleanup_pod_finalizers(event.object)  # updateJob's backup for a finished Job
        if event.type == "update" and event.old_object is not None and (
                _generation(event.old_object) == _generation(event.object)):  # fmt: skip
            self.owner.enqueue_batched(event.object)
            return ()
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
        deleting = event.type == "delete" or is_being_deleted(pod)
        if ref is None:
            # An orphan: its finalizer goes (addPod/updatePod/deletePod), and a Job selecting it may adopt it.
            if has_tracking_finalizer(pod):
                self.owner.enqueue_orphan_pod(pod)
            if not deleting:
                for request in owners_selecting(self.owner.jobs.cache, pod):
                    self.owner.controller.queue.add_after(request, self.owner.sync_batch_period)
            self._old_owner(event)
            return []
        if job is None or (deleting and _finished(job)):
            # deletePod: syncJob will not take the finalizer off a pod of a Job gone or finished.
            if deleting and has_tracking_finalizer(pod):
                self.owner.enqueue_orphan_pod(pod)
            self._old_owner(event)
            return []
        key = object_key(job)
        removing = self.owner.removing.get(key)
        if removing is not None and (event.type == "delete" or not has_tracking_finalizer(pod)):
            removing.discard(uid_of(pod))
        if event.type == "create" and not is_being_deleted(pod):
            self.owner.expectations.creation_observed(key)
        elif event.type == "delete" or is_being_deleted(pod):
            self.owner.expectations.deletion_observed(key, object_key(pod))
        self.owner.enqueue_batched(job)
        self._old_owner(event)
        return []

    def _old_owner(self, event: Event) -> None:
        """updatePod: when the controller reference changed, the Job it named syncs too."""
        if event.type != "update" or event.old_object is None:
            return
        old_ref = controller_of(event.old_object)
        if old_ref is None or old_ref == controller_of(event.object):
            return
        job = self.owner.resolve(namespace_of(event.object), old_ref)
        if job is not None:
            key = object_key(job)
            removing = self.owner.removing.get(key)
            if removing is not None and not has_tracking_finalizer(event.object):
                removing.discard(uid_of(event.object))
            self.owner.enqueue_batched(job)
