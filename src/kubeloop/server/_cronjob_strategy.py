"""The CronJob strategy (k/k ``pkg/registry/batch/cronjob/strategy.go``, release 1.32).

- Create: an empty status and generation 1, the job template's disabled pod fields dropped,
  ``ValidateCronJobCreate`` (:mod:`kubeloop.api._cronjob_validation`); warnings: the name as a DNS label
  (it prefixes the Jobs' and pods' names), then ``WarningsForJobSpec`` of the job template under
  ``spec.jobTemplate.spec``.
- Update: status kept, the generation bumped when the spec changed, ``ValidateCronJobUpdate``; warnings:
  ``WarningsForJobSpec`` when the generation moved, and one for a schedule that still carries ``TZ``
  (upstream names the field ``spec.spec.schedule`` in that text).
- ``/status``: the spec kept from the stored object, nothing validated, no warnings.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._cronjob_validation import (
    job_view,
    under_job_template,
    validate_cronjob,
    validate_cronjob_update,
)
from kubeloop.api._pod_drop_disabled import drop_disabled_template_fields
from kubeloop.server._strategy import (
    _DecodesQuantities,
    _meta,
    _pod_name_warnings,
    _ZeroStatus,
)
from kubeloop.server._workload_strategy import job_spec_warnings

__all__ = ["CronJobStrategy"]

_TZ_WARNING = ("cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
               "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")


def _template_warnings(cronjob: dict[str, Any]) -> list[str]:
    return [under_job_template(w) for w in job_spec_warnings(job_view(cronjob))]


class CronJobStrategy(_DecodesQuantities, _ZeroStatus):
    warns = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        drop_disabled_template_fields(job_view(obj), None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        drop_disabled_template_fields(job_view(new), job_view(old))  # before the generation compares specs
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_cronjob(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [] if subresource else validate_cronjob_update(new, old)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *_template_warnings(obj)]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status":
            return []
        warnings = _template_warnings(new) if _meta(new).get("generation") != _meta(old).get("generation") else []
        schedule = (new.get("spec") or {}).get("schedule")
        if isinstance(schedule, str) and "TZ" in schedule:
            warnings.append(_TZ_WARNING)
        return warnings
