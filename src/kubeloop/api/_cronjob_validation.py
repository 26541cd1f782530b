"""A batch/v1 CronJob's validation, as k/k ``pkg/apis/batch/validation/validation.go`` (release 1.32) does it.

- :func:`validate_cronjob` is ``ValidateCronJobCreate`` beyond ObjectMeta (the write path checks that
  first): ``validateCronJobSpec`` with no old spec, then the name at most 52 characters (the controller
  appends ``-<minutes since epoch>``, 11 characters, to name a Job, whose limit is 63).
- :func:`validate_cronjob_update` is ``ValidateCronJobUpdate``: the spec again against the old one (no
  name-length rule, so an old long-named CronJob can still be changed or deleted).

``validateCronJobSpec``: ``schedule`` required, parsed by robfig/cron v3's ``ParseStandard``
(:mod:`kubeloop.api._cron_schedule`, its message as the detail), and ``TZ``/``CRON_TZ`` refused in it
("use timeZone field instead"), unless the old schedule had one already (then only refused together with
``timeZone``); ``startingDeadlineSeconds`` not negative; ``timeZone`` (when new or changed) non-empty, each
``/`` part of tz-database characters, not ``Local``, and known to the tz database; ``concurrencyPolicy``
one of Allow, Forbid, Replace; ``ValidateJobTemplateSpec`` (the Job spec's own rules under
``spec.jobTemplate.spec``, reusing :mod:`kubeloop.api._job_validation`, with no ``selector`` and no
``manualSelector: true``: the Job's selector is generated); the history limits not negative.

Pure functions; nothing is mutated.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._cron_schedule import CronSyntaxError, load_location, parse_standard
from kubeloop.api._errors import FieldError
from kubeloop.api._job_validation import job_spec_errors
from kubeloop.api._pod_fields import go_text, mapping_of
from kubeloop.api._workload_validation import go_label_selector, nonnegative

__all__ = ["MAX_CRONJOB_NAME_LENGTH", "job_view", "validate_cronjob", "validate_cronjob_update"]

MAX_CRONJOB_NAME_LENGTH = 63 - 11  # DNS1035LabelMaxLength minus the "-<timestamp>" the controller adds
_TZ_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
_JOB_TEMPLATE = "spec.jobTemplate."


def job_view(cronjob: Mapping[str, Any]) -> dict[str, Any]:
    """The CronJob's ``spec.jobTemplate`` as a Job-shaped object (the CronJob's metadata, the template's
    spec), so the Job rules and warnings, written for ``spec.…`` paths, apply to it."""
    template = mapping_of(mapping_of(cronjob.get("spec")).get("jobTemplate"))
    return {"metadata": cronjob.get("metadata"), "spec": template.get("spec")}


def under_job_template(path: str) -> str:
    """A Job's ``spec…`` path as the same field of a CronJob's job template."""
    return _JOB_TEMPLATE + path if path == "spec" or path.startswith(("spec.", "spec[")) else path


def _template_errors(cronjob: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """``ValidateJobTemplateSpec`` (path ``spec.jobTemplate``)."""
    errs = job_spec_errors(job_view(cronjob), None if old is None else job_view(old))
    errs = [dataclasses.replace(e, field=under_job_template(e.field)) for e in errs]
    spec = mapping_of(mapping_of(mapping_of(cronjob.get("spec")).get("jobTemplate")).get("spec"))
    selector = spec.get("selector")
    if selector is not None:
        # field.Invalid of a *LabelSelector prints its String() (as validateGeneratedSelector's does).
        errs.append(FieldError("invalid", "spec.jobTemplate.spec.selector",
                               f"{go_label_selector(mapping_of(selector))}: `selector` will be auto-generated"))
    if spec.get("manualSelector") is True:
        errs.append(FieldError.not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"]))
    return errs


def _schedule_errors(schedule: str, *, tz_allowed: bool, time_zone: Any) -> list[FieldError]:
    """``validateScheduleFormat``."""
    errs: list[FieldError] = []
    try:
        parse_standard(schedule)
    except CronSyntaxError as err:
        errs.append(FieldError.invalid("spec.schedule", schedule, str(err)))
    if tz_allowed and "TZ" in schedule and time_zone is not None:
        errs.append(FieldError.invalid("spec.schedule", schedule,
                                       "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not tz_allowed and "TZ" in schedule:
        errs.append(FieldError.invalid("spec.schedule", schedule,
                                       "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _time_zone_errors(time_zone: Any) -> list[FieldError]:
    """``validateTimeZone``."""
    path = "spec.timeZone"
    if time_zone is None:
        return []
    name = go_text(time_zone)
    if not name:
        return [FieldError.invalid(path, name, "timeZone must be nil or non-empty string")]
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.fullmatch(part):
            return [FieldError.invalid(path, name, f"unknown time zone {name}")]
    errs: list[FieldError] = []
    if name.lower() == "local":
        errs.append(FieldError.invalid(path, name,
                                       "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
    try:
        if name != "Local":  # Go's LoadLocation answers "Local" with the process's zone
            load_location(name)
    except ValueError as err:
        errs.append(FieldError.invalid(path, name, str(err)))
    return errs


def _cronjob_spec_errors(cronjob: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """``validateCronJobSpec``."""
    spec = mapping_of(cronjob.get("spec"))
    old_spec = mapping_of(old.get("spec")) if old is not None else None
    errs: list[FieldError] = []
    schedule = go_text(spec.get("schedule"))
    if not schedule:
        errs.append(FieldError.required("spec.schedule"))
    else:
        tz_allowed = old_spec is not None and "TZ" in go_text(old_spec.get("schedule"))
        errs += _schedule_errors(schedule, tz_allowed=tz_allowed, time_zone=spec.get("timeZone"))
    errs += nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _time_zone_errors(spec.get("timeZone"))
    policy = go_text(spec.get("concurrencyPolicy"))
    if not policy:
        errs.append(FieldError.required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(FieldError.not_supported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]))
    errs += _template_errors(cronjob, old)
    errs += nonnegative(spec.get("successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit")
    errs += nonnegative(spec.get("failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit")
    return errs


def validate_cronjob(cronjob: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCronJobCreate`` beyond ObjectMeta."""
    errs = _cronjob_spec_errors(cronjob, None)
    name = go_text(mapping_of(cronjob.get("metadata")).get("name"))
    if len(name) > MAX_CRONJOB_NAME_LENGTH:
        errs.append(FieldError.invalid("metadata.name", name, f"must be no more than {MAX_CRONJOB_NAME_LENGTH} characters"))
    return errs


def validate_cronjob_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCronJobUpdate`` beyond ObjectMeta's update rules."""
    return _cronjob_spec_errors(new, old)
