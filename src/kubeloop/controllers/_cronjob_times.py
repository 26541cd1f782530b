"""When a CronJob should have run, and the Job it runs: k/k ``pkg/controller/cronjob/utils.go`` (release 1.32).

- :func:`cronjob_schedule` is the controller's ``formatSchedule`` + ``cron.ParseStandard``: a schedule
  with ``TZ`` in it is taken as written (with an ``UnsupportedSchedule`` warning), else ``spec.timeZone``
  is put in front as ``TZ=<zone>``; a schedule left without a zone runs in ``local_zone``.
- :func:`most_recent_schedule_time` is ``mostRecentScheduleTime``: from the last schedule time (or the
  creation time), moved up to ``now - startingDeadlineSeconds`` when asked, the schedule's next two times
  ``t1``, ``t2``; nothing due before ``t1``, ``t1`` before ``t2``; past that, an estimate of how many were
  missed (``(now - t1) / (t2 - t1) + 1``, "many" above 100) and the latest time not after ``now``, found by
  stepping from just before the estimate. A schedule whose two next times are under a second apart (or
  that never comes again) is an error.
- :func:`next_schedule_delay` is ``nextScheduleTimeDuration``: how long until the time after the most
  recent one (or after the last one, or after now when some were missed), plus 100 ms for clock skew.
- :func:`job_from_template` is ``getJobFromTemplate2``: the template's labels and annotations, the
  ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation (RFC 3339 in the CronJob's zone;
  CronJobsScheduledAnnotation is GA in 1.32), the name ``<cronjob>-<scheduled time in minutes since the
  epoch>``, a controller reference that blocks the owner's deletion, and a copy of the template's spec.

Times are Unix seconds on the injected clock. A schedule without a zone runs in the controller manager's
local zone, as upstream's: robfig/cron's ``ParseStandard`` leaves it ``time.Local``, ``SpecSchedule.Next``
then steps in the zone of the time it is given, and the controller's times are all local (``time.Now()``,
and ``metav1.Time`` decodes to ``.Local()``). The scheduled-timestamp annotation is another matter:
``time.LoadLocation("")`` is UTC, so a CronJob without ``timeZone`` gets it in UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import Any

from kubeloop.api import (
    CronSchedule,
    SpecSchedule,
    copy_json,
    load_location,
    name_of,
    parse_standard,
    parse_time,
    uid_of,
)

__all__ = [
    "FEW_MISSED",
    "MANY_MISSED",
    "NONE_MISSED",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "ScheduleError",
    "cronjob_schedule",
    "job_from_template",
    "job_name",
    "most_recent_schedule_time",
    "next_schedule_delay",
    "rfc1123z",
    "rfc3339_in",
]

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1
NONE_MISSED, FEW_MISSED, MANY_MISSED = 0, 1, 2


class ScheduleError(ValueError):
    """A schedule that parses but cannot be stepped (its two next times under a second apart)."""


def _spec(cj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = cj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(cj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = cj.get("status")
    return status if isinstance(status, Mapping) else {}


def cronjob_schedule(cj: Mapping[str, Any], *, local_zone: tzinfo = UTC) -> tuple[str, CronSchedule]:
    """(the text parsed, the schedule); :class:`~kubeloop.api.CronSyntaxError` when it does not parse."""
    schedule = str(_spec(cj).get("schedule") or "")
    zone = _spec(cj).get("timeZone")
    if "TZ" not in schedule and isinstance(zone, str):
        try:
            load_location(zone)
            schedule = f"TZ={zone} {schedule}"
        except ValueError:
            pass
    parsed = parse_standard(schedule)
    if isinstance(parsed, SpecSchedule) and parsed.zone is None:
        parsed = replace(parsed, zone=local_zone)
    return schedule, parsed


def _time(value: Any) -> float | None:
    try:
        return parse_time(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def most_recent_schedule_time(cj: Mapping[str, Any], now: float, schedule: CronSchedule, *,
                              include_deadline: bool) -> tuple[float, float | None, int]:
    """(earliest time considered, most recent due time or None, NONE/FEW/MANY_MISSED); raises
    :class:`ScheduleError` for a schedule that cannot be stepped."""
    earliest = _time(_status(cj).get("lastScheduleTime"))
    if earliest is None:
        earliest = _time((cj.get("metadata") or {}).get("creationTimestamp")) or 0.0
    deadline = _spec(cj).get("startingDeadlineSeconds")
    if include_deadline and isinstance(deadline, int) and not isinstance(deadline, bool):
        earliest = max(earliest, now - deadline)
    t1 = schedule.next(earliest)
    if t1 is not None and now < t1:
        return earliest, None, NONE_MISSED
    t2 = schedule.next(t1) if t1 is not None else None
    if t1 is not None and t2 is not None and now < t2:
        return earliest, t1, NONE_MISSED
    between = round(t2 - t1) if t1 is not None and t2 is not None else 0
    if t1 is None or between < 1:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    missed = int(now - t1) // between + 1
    recent: float | None = None
    t = schedule.next(t1 + (missed - 2) * between)
    while t is not None and t <= now:
        recent = t
        t = schedule.next(t)
    kind = MANY_MISSED if missed > 100 else FEW_MISSED if missed > 0 else NONE_MISSED
    return earliest, recent, kind


def next_schedule_delay(cj: Mapping[str, Any], now: float, schedule: CronSchedule) -> float | None:
    """Seconds until the sync that should come next (``None``: the schedule never comes again)."""
    try:
        earliest, recent, missed = most_recent_schedule_time(cj, now, schedule, include_deadline=False)
    except ScheduleError:
        recent = now
    else:
        if recent is None:
            recent = earliest if missed == NONE_MISSED else now
    following = schedule.next(recent)
    return None if following is None else following + NEXT_SCHEDULE_DELTA - now


def job_name(cj: Mapping[str, Any], scheduled: float) -> str:
    return f"{name_of(cj)}-{int(scheduled) // 60}"


def rfc3339_in(seconds: float, zone_name: str) -> str:
    """Go's ``t.In(zone).Format(time.RFC3339)``: ``Z`` for a zero offset."""
    stamp = datetime.fromtimestamp(int(seconds), load_location(zone_name))
    offset = stamp.utcoffset()
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def rfc1123z(seconds: float) -> str:
    """Go's ``t.UTC().Format(time.RFC1123Z)``."""
    stamp = datetime.fromtimestamp(int(seconds), load_location("UTC"))
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    return (f"{days[stamp.weekday()]}, {stamp.day:02d} {months[stamp.month - 1]} {stamp.year} "
            f"{stamp:%H:%M:%S} +0000")


def job_from_template(cj: Mapping[str, Any], scheduled: float) -> dict[str, Any]:
    template = _spec(cj).get("jobTemplate")
    template = template if isinstance(template, Mapping) else {}
    template_meta = template.get("metadata") if isinstance(template.get("metadata"), Mapping) else {}
    assert isinstance(template_meta, Mapping)
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    zone = _spec(cj).get("timeZone")
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = rfc3339_in(scheduled, zone if isinstance(zone, str) else "")
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": name_of(cj), "uid": uid_of(cj),
             "controller": True, "blockOwnerDeletion": True}
    meta: dict[str, Any] = {"name": job_name(cj, scheduled), "annotations": annotations, "ownerReferences": [owner]}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": copy_json(template.get("spec") or {})}

