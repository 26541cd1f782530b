"""One sync of one Job (``syncJob``): what it counts, what it decides, the status it writes.

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32). :class:`JobSync` is built per
reconcile by :class:`~kubeloop.controllers._job.JobController` (its owner: client, clock, expectations,
backoff records and the pod writes) from the cached Job (a copy) and its claimed pods, and runs once:
the finishing condition (existing FailureTarget/SuccessCriteriaMet, pod failure policy, backoff limit,
deadline, then for an Indexed Job the per-index limits (:mod:`._job_index_failures`) and the success
policy (:mod:`._job_success_policy`)), the pod changes (``manageJob``, Indexed or not), then the status (``trackJobStatusAndRemoveFinalizers``:
uncounted UIDs first, finalizers off, then the counters and the terminal condition). A single state
machine over one Job; the module docstring of :mod:`kubeloop.controllers._job` tells the whole story.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeloop.api import ApiError, format_time, is_being_deleted, parse_time, uid_of
from kubeloop.controllers._job_index_failures import (
    creatable_now,
    delayed_deletions,
    failed_indexes,
    has_backoff_limit_per_index,
    replacement_annotations,
)
from kubeloop.controllers._job_indexes import completion_index, format_indexes, parse_indexes
from kubeloop.controllers._job_pods import (
    BackoffRecord,
    ensure_condition,
    has_tracking_finalizer,
    is_pod_failed,
    is_terminating,
    match_pod_failure_policy,
    new_condition,
    only_replaces_failed,
    past_backoff_limit_on_failure,
)
from kubeloop.controllers._job_success_policy import SUCCESS_POLICY_REASON, match_success_policy
from kubeloop.controllers._workload_kinds import int_field
from kubeloop.controllers._workload_pods import deletion_order, is_pod_active, is_pod_ready
from kubeloop.runtime import Result

if TYPE_CHECKING:
    from kubeloop.controllers._job import JobController

__all__ = ["MAX_POD_CREATE_DELETE_PER_SYNC", "JobSync"]

MAX_POD_CREATE_DELETE_PER_SYNC = 500
_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
_DEADLINE_MESSAGE = "Job was active longer than specified deadline"
_COMPLETIONS_MESSAGE = "Reached expected number of succeeded pods"
_MAX_FAILED_INDEXES_MESSAGE = "Job has exceeded the specified maximal number of failed indexes"
_FAILED_INDEXES_MESSAGE = "Job has failed indexes"


def _target(status: Mapping[str, Any]) -> dict[str, Any] | None:
    """The interim condition a finishing Job already shows (FailureTarget first)."""
    for kind in ("FailureTarget", "SuccessCriteriaMet"):
        for cond in status.get("conditions") or ():
            if cond.get("type") == kind and cond.get("status") == "True":
                return dict(cond)
    return None


class JobSync:
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
        self.counted = counted
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.completions = int_field(self.spec, "completions")
        # A pod failure policy may ignore a failed pod (not counted, its finalizer still comes off) or
        # fail the Job (getFailJobMessage looks at every failed pod, counted or not). A failed pod of an
        # Indexed Job without a valid index is not counted either (getValidPodsWithFilter).
        self.new_failed: list[Mapping[str, Any]] = []
        self.ignored: list[Mapping[str, Any]] = []
        for pod in self.pods:
            if (has_tracking_finalizer(pod) and uid_of(pod) not in counted
                    and (pod.get("status") or {}).get("phase") != "Succeeded" and is_pod_failed(pod, job)):
                counts = match_pod_failure_policy(job, pod)[1] and self._valid_index(pod)
                (self.new_failed if counts else self.ignored).append(pod)
        self.fail_job_message = next((message for pod in self.pods if is_pod_failed(pod, job)
                                      and (message := match_pod_failure_policy(job, pod)[0]) is not None), None)
        self.active_pods = [p for p in self.pods if is_pod_active(p)]
        self.succeeded = int_field(status, "succeeded") + len(self.uncounted_succeeded) + len(self.new_succeeded)
        # An Indexed Job counts succeeded indexes (status.completedIndexes), not pods.
        self.completed: set[int] = set()
        if self.indexed:
            self.completed = parse_indexes(status.get("completedIndexes"), self.completions)
            self.completed |= {ix for p in self.new_succeeded if (ix := completion_index(p)) is not None
                               and ix < self.completions}
            self.succeeded = len(self.completed)
        self.failed = int_field(status, "failed") + len(self.uncounted_failed) + len(self.new_failed)
        self.suspended = self.spec.get("suspend") is True
        self.requeue: float | None = None
        self.deleted = 0  # pods this sync deleted: terminating until the cache shows them
        self.deleted_ready = 0  # ready pods among them: no longer ready (jobCtx.ready -= deletedReady)
        # Backoff limit per index: the failed indexes, and per index the failed pod left uncounted (its
        # finalizer on) until its replacement carries the index's failure counts.
        self.failed_indexes: set[int] | None = None
        self.delayed: dict[int, Mapping[str, Any]] = {}
        if self.indexed and has_backoff_limit_per_index(job):
            previous = parse_indexes(status.get("failedIndexes"), self.completions)
            self.failed_indexes = failed_indexes(job, self.pods, previous, self.completions)
            self.delayed = delayed_deletions(job, self.pods, active=self.active_pods, succeeded=self.completed,
                                             failed=self.failed_indexes, completions=self.completions, now=self.now)

    async def run(self) -> Result | None:
        owner, job, status = self.owner, self.job, self.status
        record = owner.backoff.get(uid_of(job), BackoffRecord()).updated(self.new_succeeded, self.new_failed, self.now)
        owner.backoff[uid_of(job)] = record
        if status.get("startTime") is None and not self.suspended:
            status["startTime"] = format_time(self.now)
        active = len(self.active_pods)
        # Read before this sync's own pod writes change them (syncJob's satisfiedExpectations).
        satisfied = owner.expectations.satisfied(self.key)
        finishing = self._finishing_condition()
        manage_error: BaseException | None = None
        changed = False
        if finishing is not None:
            deleted = 0
            try:
                deleted = await self._delete(self.active_pods, keep_finalizers=True)
            except ApiError as err:
                manage_error = err
            if deleted != active or not satisfied:
                # Some pods may still run, or not be in the cache yet: not finished in this sync.
                finishing = None
            active -= deleted
        else:
            managed = False
            if satisfied and not is_being_deleted(job):
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
        # countReadyPods(activePods), less the ready pods this sync deleted (syncJob, manageJob).
        ready = sum(1 for p in self.active_pods if is_pod_ready(p)) - self.deleted_ready
        # The pods deleted now are terminating too (upstream adds them to jobCtx.terminating).
        terminating = sum(1 for p in self.all_pods if is_terminating(p)) + self.deleted
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
        if self.fail_job_message is not None:
            return new_condition("FailureTarget", "True", "PodFailurePolicy", self.fail_job_message, self.now)
        if self.failed > int_field(spec, "backoffLimit", 6) or past_backoff_limit_on_failure(self.job, self.pods):
            return new_condition("FailureTarget", "True", "BackoffLimitExceeded", _BACKOFF_MESSAGE, self.now)
        deadline = spec.get("activeDeadlineSeconds")
        start = self.status.get("startTime")
        if isinstance(deadline, int) and isinstance(start, str) and not self.suspended:
            remaining = deadline - (self.now - parse_time(start))
            if remaining <= 0:
                return new_condition("FailureTarget", "True", "DeadlineExceeded", _DEADLINE_MESSAGE, self.now)
            self._after(remaining)
        if self.failed_indexes is not None:
            limit = spec.get("maxFailedIndexes")
            if isinstance(limit, int) and len(self.failed_indexes) > limit:
                return new_condition("FailureTarget", "True", "MaxFailedIndexesExceeded", _MAX_FAILED_INDEXES_MESSAGE,
                                     self.now)
            if self.failed_indexes and len(self.failed_indexes) + len(self.completed) >= self.completions:
                return new_condition("FailureTarget", "True", "FailedIndexes", _FAILED_INDEXES_MESSAGE, self.now)
        if self.indexed:
            message = match_success_policy(self.job, self.completed)
            if message is not None:
                return new_condition("SuccessCriteriaMet", "True", SUCCESS_POLICY_REASON, message, self.now)
        return None

    async def _delete(self, pods: list[Mapping[str, Any]], *, keep_finalizers: bool) -> int:
        deleted = await self.owner.delete_pods(self.key, self.job, pods, keep_finalizers=keep_finalizers)
        self.deleted += deleted
        self.deleted_ready += sum(1 for p in pods if is_pod_ready(p))
        return deleted

    def _after(self, seconds: float) -> None:
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)

    async def _manage(self, active: int, record: BackoffRecord) -> int:
        """``manageJob``: the number of active pods after its writes."""
        owner, job, spec = self.owner, self.job, self.spec
        if self.suspended:
            doomed = deletion_order(self.active_pods, now=self.now)
            return active - await self._delete(doomed, keep_finalizers=False)
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
            return active - await self._delete(doomed, keep_finalizers=False)
        if active + len(self._replacing()) < want:
            wait = record.remaining(self.now)
            if wait > 0:
                self._after(wait)
                return active
            count = min(want - len(self._replacing()) - active, MAX_POD_CREATE_DELETE_PER_SYNC)
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
            return active - await self._delete(doomed, keep_finalizers=False)
        replacing = self._replacing()
        if len(by_index) + len(replacing) < want:
            per_index = self.failed_indexes is not None
            wait = 0.0 if per_index else record.remaining(self.now)  # per index, each index backs off alone
            if wait > 0:
                self._after(wait)
                return active
            count = min(want - len(replacing) - len(by_index), MAX_POD_CREATE_DELETE_PER_SYNC)
            busy = set(by_index) | (self.failed_indexes or set()) | {
                ix for p in replacing if (ix := completion_index(p)) is not None}
            pending = [ix for ix in range(self.completions) if ix not in self.completed and ix not in busy][:count]
            annotations: dict[int, dict[str, str]] | None = None
            if per_index:
                pending, wait = creatable_now(pending, self.delayed, self.now)
                if wait > 0:
                    self._after(wait)
                    return active
                annotations = {ix: replacement_annotations(job, self.delayed.get(ix)) for ix in pending}
            if pending:
                await owner.create_pods(self.key, job, len(pending), pending, annotations)
            return active + len(pending)
        return active

    def _replacing(self) -> list[Mapping[str, Any]]:
        """Terminating pods a new pod must wait for (only failed pods are replaced: ``manageJob``
        subtracts them, ``firstPendingIndexes`` skips their indexes)."""
        if not only_replaces_failed(self.job):
            return []
        return [p for p in self.all_pods if is_terminating(p)]

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
            if self.failed_indexes is not None:
                failed_text = format_indexes(self.failed_indexes)
                if status.get("failedIndexes") != failed_text:
                    status["failedIndexes"] = failed_text
                    flush = True
        else:
            succeeded_uids = self.uncounted_succeeded + [uid_of(p) for p in self.new_succeeded]
        # canRemoveFinalizer: a failed pod waiting for its index's replacement stays uncounted, unless
        # the Job is finishing or being deleted.
        held = set() if finishing is not None or is_being_deleted(self.job) else {
            uid_of(p) for p in self.delayed.values()}
        new_failed = [p for p in self.new_failed if uid_of(p) not in held]
        failed_uids = self.uncounted_failed + [uid_of(p) for p in new_failed]
        if self.new_succeeded or new_failed:
            flush = True
        released_only = [p for p in self.ignored if uid_of(p) not in held]
        if finishing is not None and finishing["type"] == "FailureTarget":
            # A failing Job counts every pod that has not terminated as failed (its pods are being
            # deleted), unless its pod failure policy ignores it.
            seen = self.counted | set(failed_uids) | {uid_of(p) for p in self.ignored}
            for pod in self.pods:
                if (has_tracking_finalizer(pod) and uid_of(pod) not in seen
                        and (pod.get("status") or {}).get("phase") != "Succeeded" and self._valid_index(pod)):
                    if match_pod_failure_policy(self.job, pod)[1]:
                        failed_uids.append(uid_of(pod))
                        flush = True
                    else:
                        released_only.append(pod)
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
            # The write replaced the Job (and its status dict) with what the server stored: what follows
            # edits that one, or the second write would send the first one's status again (a no-op that
            # left the counts uncounted and the Complete condition unwritten while its Event was recorded).
            status = self.status
        to_release = [p for p in self.pods if has_tracking_finalizer(p)
                      and (uid_of(p) in succeeded_uids or uid_of(p) in failed_uids)]
        to_release += released_only
        if self.indexed:
            to_release += self.new_succeeded
        if finishing is not None:
            # A finishing Job releases every pod (canRemoveFinalizer): the ones SuccessCriteriaMet stopped
            # are not counted at all.
            queued = {uid_of(p) for p in to_release}
            to_release += [p for p in self.pods if has_tracking_finalizer(p) and uid_of(p) not in queued]
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
                # recordJobFinished: more successes than completions (pods adopted by the selector, say).
                completions = self.spec.get("completions")
                if isinstance(completions, int) and int_field(status, "succeeded") > completions:
                    owner.event(self.job, "Warning", "TooManySucceededPods",
                                "Too many succeeded pods running after completion count reached")
                owner.event(self.job, "Normal", "Completed", "Job completed")
            else:
                owner.event(self.job, "Warning", final["reason"], final["message"])
        if removal_error is not None:
            raise removal_error

    def _valid_index(self, pod: Mapping[str, Any]) -> bool:
        """Only a pod of a valid index counts for an Indexed Job (``getValidPodsWithFilter``)."""
        if not self.indexed:
            return True
        ix = completion_index(pod)
        return ix is not None and ix < self.completions

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
