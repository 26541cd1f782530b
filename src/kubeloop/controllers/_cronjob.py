"""The CronJob controller: create a CronJob's Jobs on its schedule, keep its status, trim its history.

Upstream: k/k ``pkg/controller/cronjob/cronjob_controllerv2.go`` (release 1.32), kube-controller-manager's
``cronjob`` controller (Events from ``cronjob-controller``). One sync of a CronJob, on the injected clock:

1. Its Jobs are those in its namespace whose controller reference names it. ``cleanupFinishedJobs``: past
   ``successfulJobsHistoryLimit`` Complete Jobs and ``failedJobsHistoryLimit`` Failed Jobs, the oldest
   (by ``status.startTime``, none last, then by name) are deleted (background propagation;
   ``SuccessfulDelete``/``FailedDelete``).
2. ``syncCronJob``: an unfinished Job missing from ``status.active`` is re-checked on a fresh read of the
   CronJob (else ``UnexpectedJob``); a finished one in it leaves it (``SawCompletedJob``); a Complete one
   outside it moves ``lastSuccessfulTime`` up to its ``completionTime``; an active entry whose Job is gone
   (on a fresh read) leaves it (``MissingJob``). A CronJob being deleted, with an unknown time zone
   (``UnknownTimeZone``), suspended, or with a schedule that does not parse (``UnparseableSchedule``) or
   step (``InvalidSchedule``) stops there. Otherwise the most recent due time (:mod:`._cronjob_times`;
   ``TooManyMissedTimes`` past 100 missed): none, or already run (its Job active, or it is
   ``lastScheduleTime``), or later than ``startingDeadlineSeconds`` (``MissSchedule``), or Forbid with
   a Job active (``JobAlreadyActive``): nothing is created. Replace deletes the active Jobs first. The Job
   is created from the template (``SuccessfulCreate``; a namesake it controls that is not active is
   taken as its own, one it does not control stops the sync), added to ``status.active`` and
   ``lastScheduleTime`` set.
   The time from the scheduled time to the Job's ``creationTimestamp`` is observed in
   ``cronjob_controller_job_creation_skew_duration_seconds`` (upstream's ``metrics.CronJobCreationSkew``,
   buckets 1, 2, 4 ... 512 s), on the manager's registry.
3. The status is written once (PUT ``/status``, conditional on the cached resourceVersion), and the
   CronJob is looked at again just after its next scheduled time (100 ms later, as upstream).

A schedule without ``spec.timeZone`` runs in the controller manager's local zone, as upstream's (robfig/cron
leaves it ``time.Local``): ``local_zone``, by default Go's ``time.Local`` for this process (``TZ``, else
``/etc/localtime``, else UTC; :func:`kubeloop.api.local_location`).

A CronJob whose schedule or time zone changed is queued for its next time rather than at once (the sync
would otherwise run a time missed under the new schedule); other changes sync at once. A Job's events
wake the CronJob that controls it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Mapping
from datetime import tzinfo
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

from kubeloop.api import (
    AlreadyExists,
    ApiError,
    Clock,
    CronSyntaxError,
    NotFound,
    controller_of,
    copy_json,
    format_time,
    load_location,
    local_location,
    name_of,
    namespace_of,
    parse_time,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.controllers._cronjob_times import (
    MANY_MISSED,
    ScheduleError,
    cronjob_schedule,
    job_from_template,
    job_name,
    most_recent_schedule_time,
    next_schedule_delay,
    rfc1123z,
)
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.controllers._workload_base import WorkloadController
from kubeloop.controllers._workload_kinds import CONTROLLER_MANAGER, CRONJOBS, JOBS
from kubeloop.runtime import Event, InformerFactory, Metrics, Request, Result, SharedInformer, Watch

__all__ = ["CronJobController", "CronJobMetrics", "ReplaceFailed"]

log = logging.getLogger("kubeloop.controllers.cronjob")

# pkg/controller/cronjob/metrics/metrics.go: metrics.ExponentialBuckets(1, 2, 10).
SKEW_BUCKETS = tuple(float(2**i) for i in range(10))


class CronJobMetrics:
    """``cronjob_controller_job_creation_skew_duration_seconds``, once per registry (upstream registers
    it once per process)."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, CronJobMetrics] = weakref.WeakKeyDictionary()

    def __init__(self, registry: CollectorRegistry) -> None:
        self.skew = Histogram("cronjob_controller_job_creation_skew_duration_seconds",
                              "Time between when a cronjob is scheduled to be run, and when the corresponding "
                              "job is created", buckets=SKEW_BUCKETS, registry=registry)  # fmt: skip

    @classmethod
    def of(cls, registry: CollectorRegistry) -> CronJobMetrics:
        found = cls._by_registry.get(registry)
        if found is None:
            found = cls._by_registry[registry] = cls(registry)
        return found


def _finished_type(job: Mapping[str, Any]) -> str:
    """``getFinishedStatus``: "Complete" or "Failed" when that condition is True, else ""."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def _active(cj: Mapping[str, Any]) -> list[dict[str, Any]]:
    refs = (cj.get("status") or {}).get("active")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _in_active(cj: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in _active(cj))


def _drop_active(cj: dict[str, Any], uid: str) -> None:
    """``deleteFromActiveList``; an empty list is left out, as Go's ``omitempty`` writes it."""
    status = cj.setdefault("status", {})
    remaining = [r for r in _active(cj) if r.get("uid") != uid]
    if remaining:
        status["active"] = remaining
    else:
        status.pop("active", None)


def _reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """``ref.GetReference`` of a Job."""
    meta = job.get("metadata") or {}
    return {"kind": "Job", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", ""), "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion", "")}


def _start_key(job: Mapping[str, Any]) -> tuple[int, float, str]:
    """``byJobStartTime``: started Jobs first, earliest first, then by name."""
    start = (job.get("status") or {}).get("startTime")
    try:
        return (0, parse_time(start), name_of(job)) if isinstance(start, str) and start else (1, 0.0, name_of(job))
    except ValueError:
        return (1, 0.0, name_of(job))


def _after(a: Any, b: Any) -> bool:
    try:
        return isinstance(a, str) and (not isinstance(b, str) or parse_time(a) > parse_time(b))
    except ValueError:
        return False


class ReplaceFailed(Exception):
    """A Replace CronJob's active Job could not be deleted: the sync is retried with backoff."""


class CronJobController(WorkloadController):
    """Reconciles CronJobs; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "cronjob"
    kind = "CronJob"
    api_version = "batch/v1"
    resource = CRONJOBS

    def __init__(
        self,
        client: Client,
        informers: InformerFactory,
        *,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        workers: int = 5,
        field_manager: str = CONTROLLER_MANAGER,
        local_zone: tzinfo | None = None,
    ) -> None:
        # A schedule without timeZone runs in the controller manager's local zone (Go's time.Local: TZ,
        # else /etc/localtime), as upstream's; see local_zone.
        self._local_zone = local_zone
        super().__init__(client, informers, clock=clock, metrics=metrics, workers=workers, field_manager=field_manager)
        self.skew = CronJobMetrics.of(self.controller.metrics.registry).skew

    @property
    def local_zone(self) -> tzinfo:
        """The zone of schedules without ``timeZone``: the one given, else this process's ``time.Local``,
        found when first needed, as Go's is (``time/zoneinfo.go``: ``localLoc.get`` runs ``initLocal`` once,
        on first use): building the controller (``kubeloop up``'s controller manager, before its first
        request) does not load the zone database."""
        if self._local_zone is None:
            self._local_zone = local_location()
        return self._local_zone

    @local_zone.setter
    def local_zone(self, zone: tzinfo) -> None:
        self._local_zone = zone

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.cronjobs: SharedInformer = informers.informer(CRONJOBS)
        self.jobs: SharedInformer = informers.informer(JOBS)
        return [Watch(self.cronjobs, _CronJobEvents(self)), Watch(self.jobs, _JobEvents(self))]

    # -- reconcile (sync) -----------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        cached = self.cronjobs.cache.get(f"{request.namespace}/{request.name}")
        if cached is None:
            return None
        jobs = [j for j in self.jobs.cache.list(namespace=request.namespace)
                if (ref := controller_of(j)) is not None and ref.get("name") == request.name]
        cj = copy_json(cached)
        changed = await self._cleanup_finished(cj, jobs)
        sync = _Sync(self, cj, jobs)
        delay: float | None = None
        error: BaseException | None = None
        try:
            delay = await sync.run()
        except (ApiError, ReplaceFailed) as err:  # the status so far is written, then the sync is retried
            error = err
        if changed or sync.changed:
            await self.put_status(cj, dict(cj.get("status") or {}))
        if delay is not None:
            return Result(requeue_after=max(delay, 0.001))
        if error is not None:
            raise error
        return None

    async def _cleanup_finished(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
        spec = cj.get("spec") or {}
        changed = False
        for kind, key in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(key)
            if not isinstance(limit, int) or isinstance(limit, bool):
                continue
            finished = sorted((j for j in jobs if _finished_type(j) == kind), key=_start_key)
            for job in finished[:max(0, len(finished) - limit)]:
                changed = await self.delete_job(cj, job) or changed
        return changed

    async def delete_job(self, cj: dict[str, Any], job: Mapping[str, Any]) -> bool:
        """``deleteJob``: the Job (background propagation), then its entry in ``status.active``."""
        try:
            await self.client.delete(JOBS, name_of(job), namespace=namespace_of(job), propagation_policy="Background")
        except ApiError as err:
            self.event(cj, "Warning", "FailedDelete", f"Deleted job: {err.message or err}")
            return False
        _drop_active(cj, uid_of(job))
        self.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name_of(job)}")
        return True

    def resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``resolveControllerRef``: the CronJob a Job's controller reference names, if it is that one."""
        if ref is None or ref.get("kind") != "CronJob":
            return None
        cj = self.cronjobs.cache.get(f"{namespace}/{ref.get('name')}")
        return cj if cj is not None and uid_of(cj) == ref.get("uid") else None


class _Sync:
    """One ``syncCronJob``: mutates ``cj`` (its status) and says whether it changed."""

    def __init__(self, owner: CronJobController, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        self.owner, self.cj, self.jobs = owner, cj, jobs
        self.changed = False

    def event(self, event_type: str, reason: str, message: str) -> None:
        self.owner.event(self.cj, "Warning" if event_type == "Warning" else "Normal", reason, message)

    async def run(self) -> float | None:
        owner, now = self.owner, self.owner.clock.now()
        await self._reconcile_jobs()
        cj = self.cj
        if (cj.get("metadata") or {}).get("deletionTimestamp"):
            return None
        spec = cj.get("spec") or {}
        zone = spec.get("timeZone")
        if isinstance(zone, str):
            try:
                load_location(zone)
            except ValueError as err:
                self.event("Warning", "UnknownTimeZone", f'invalid timeZone: "{zone}": {err}')
                return None
        if spec.get("suspend") is True:
            return None
        raw = str(spec.get("schedule") or "")
        if "TZ" in raw:
            self.event("Warning", "UnsupportedSchedule",
                       f'CRON_TZ or TZ used in schedule "{raw}" is not officially supported, see '
                       "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
        try:
            _, schedule = cronjob_schedule(cj, local_zone=owner.local_zone)
        except CronSyntaxError as err:
            self.event("Warning", "UnparseableSchedule", f'unparseable schedule: "{raw}" : {err}')
            return None
        try:
            _, scheduled, missed = most_recent_schedule_time(cj, now, schedule, include_deadline=True)
        except ScheduleError as err:
            self.event("Warning", "InvalidSchedule", f"invalid schedule: {raw} : {err}")
            return None
        if scheduled is not None and missed == MANY_MISSED:
            self.event("Warning", "TooManyMissedTimes",
                       "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
        if scheduled is None or scheduled > now:
            return next_schedule_delay(cj, now, schedule)
        deadline = spec.get("startingDeadlineSeconds")
        if isinstance(deadline, int) and not isinstance(deadline, bool) and scheduled + deadline < now:
            self.event("Warning", "MissSchedule", f"Missed scheduled time to start a job: {rfc1123z(scheduled)}")
            return next_schedule_delay(cj, now, schedule)
        last = (cj.get("status") or {}).get("lastScheduleTime")
        name = job_name(cj, scheduled)
        if any(r.get("name") == name and r.get("namespace") == namespace_of(cj) for r in _active(cj)) or (
                isinstance(last, str) and parse_time(last) == scheduled):
            return next_schedule_delay(cj, now, schedule)
        policy = spec.get("concurrencyPolicy")
        if policy == "Forbid" and _active(cj):
            self.event("Normal", "JobAlreadyActive",
                       "Not starting job because prior execution is running and concurrency policy is Forbid")
            return next_schedule_delay(cj, now, schedule)
        if policy == "Replace":
            for ref in _active(cj):
                try:
                    job = await owner.client.get(JOBS, str(ref.get("name")), namespace=str(ref.get("namespace")))
                except ApiError as err:
                    self.event("Warning", "FailedGet", f"Get job: {err.message or err}")
                    raise
                if not await owner.delete_job(cj, job):
                    raise ReplaceFailed(f"could not replace job {namespace_of(job)}/{name_of(job)}")
                self.changed = True
        created = await self._create(scheduled)
        if created is None:
            return None
        status = cj.setdefault("status", {})
        status["active"] = [*_active(cj), _reference(created)]
        status["lastScheduleTime"] = format_time(scheduled)
        self.changed = True
        return next_schedule_delay(cj, now, schedule)

    async def _create(self, scheduled: float) -> Mapping[str, Any] | None:
        """Create the Job for ``scheduled``: the Job to add to ``status.active``, or ``None`` to stop."""
        owner, cj = self.owner, self.cj
        body = job_from_template(cj, scheduled)
        try:
            made = await owner.client.create(JOBS, body, namespace=namespace_of(cj), field_manager=owner.field_manager)
        except AlreadyExists:
            made = await owner.client.get(JOBS, body["metadata"]["name"], namespace=namespace_of(cj))
            ref = controller_of(made)
            if ref is None or ref.get("uid") != uid_of(cj) or ref.get("kind") != "CronJob":
                return None  # another actor's Job: it keeps the status up to date
            if _in_active(cj, uid_of(made)):
                return None
            log.info("cronjob %s/%s: job %s already exists", namespace_of(cj), name_of(cj), name_of(made))
            return made
        except ApiError as err:
            if not is_namespace_terminating_error(err):
                self.event("Warning", "FailedCreate", f"Error creating job: {err.message or err}")
            raise
        self.event("Normal", "SuccessfulCreate", f"Created job {name_of(made)}")
        # Upstream: CronJobCreationSkew.Observe(creationTimestamp.Sub(scheduledTime).Seconds()).
        created_at = made["metadata"].get("creationTimestamp")
        if created_at:
            owner.skew.observe(parse_time(created_at) - scheduled)
        return made

    async def _reconcile_jobs(self) -> None:
        """The Jobs against ``status.active`` and ``lastSuccessfulTime``."""
        owner, cj = self.owner, self.cj
        children = set()
        for job in self.jobs:
            uid = uid_of(job)
            children.add(uid)
            found, finished = _in_active(cj, uid), _finished_type(job)
            if not found and not finished:
                fresh = await owner.client.get(CRONJOBS, name_of(cj), namespace=namespace_of(cj))
                if _in_active(fresh, uid):
                    cj.clear()
                    cj.update(fresh)
                    continue
                self.event("Warning", "UnexpectedJob",
                           f"Saw a job that the controller did not create or forgot: {name_of(job)}")
            elif found and finished:
                _drop_active(cj, uid)
                self.event("Normal", "SawCompletedJob", f"Saw completed job: {name_of(job)}, status: {finished}")
                self.changed = True
            elif finished == "Complete":
                completed = (job.get("status") or {}).get("completionTime")
                status = cj.setdefault("status", {})
                if status.get("lastSuccessfulTime") is None and completed is not None:
                    status["lastSuccessfulTime"] = completed
                    self.changed = True
                if _after(completed, status.get("lastSuccessfulTime")):
                    status["lastSuccessfulTime"] = completed
                    self.changed = True
        for ref in _active(cj):
            if ref.get("uid") in children:
                continue
            try:
                await owner.client.get(JOBS, str(ref.get("name")), namespace=str(ref.get("namespace")))
            except NotFound:
                self.event("Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
                _drop_active(cj, str(ref.get("uid")))
                self.changed = True


class _CronJobEvents:
    """``updateCronJob``: a changed schedule or time zone waits for its next time; anything else syncs now."""

    def __init__(self, owner: CronJobController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        new, old = event.object, event.old_object
        if event.type == "update" and old is not None:
            spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
            if spec.get("schedule") != old_spec.get("schedule") or spec.get("timeZone") != old_spec.get("timeZone"):
                try:
                    _, schedule = cronjob_schedule(new, local_zone=self.owner.local_zone)
                except CronSyntaxError:
                    self.owner.event(new, "Warning", "UnParseableCronJobSchedule",
                                     f"unparseable schedule for cronjob: {spec.get('schedule')}")
                    return ()
                delay = next_schedule_delay(new, self.owner.clock.now(), schedule)
                if delay is not None:
                    self.owner.controller.queue.add_after(Request.for_object(new), max(delay, 0.0))
                return ()
        return (Request.for_object(new),)


class _JobEvents:
    """``addJob``/``updateJob``/``deleteJob``: the CronJob that controls the Job (old and new on update)."""

    def __init__(self, owner: CronJobController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        out: list[Request] = []
        for job in event.objects():
            cj = self.owner.resolve(namespace_of(job), controller_of(job))
            if cj is not None and Request.for_object(cj) not in out:
                out.append(Request.for_object(cj))
        return out
