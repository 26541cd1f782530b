"""The pod-template owners' strategies: Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs (k/k
``pkg/registry/apps/{deployment,replicaset,statefulset,daemonset}/strategy.go`` and
``pkg/registry/batch/job/strategy.go``, release 1.32).

Each runs its kind's validation and the pod template's (:mod:`kubeloop.api._pod_spec_validation`);
they live here, imported by :func:`~kubeloop.server._strategy.strategy_for` when one of these kinds
first needs its strategy, so that validation is loaded by the first such write and not by the
server's start-up, which writes none. :data:`WORKLOAD_STRATEGIES` maps each kind to its class.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._daemonset_validation import (
    validate_daemonset,
    validate_daemonset_status_update,
    validate_daemonset_update,
)
from kubeloop.api._deployment_validation import (
    validate_deployment,
    validate_deployment_status_update,
    validate_deployment_update,
    validate_replicaset,
    validate_replicaset_status_update,
    validate_replicaset_update,
)
from kubeloop.api._job_validation import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    validate_job,
    validate_job_status_update,
    validate_job_update,
)
from kubeloop.api._pod_drop_disabled import drop_disabled_template_fields
from kubeloop.api._pod_spec_validation import validate_pod_template
from kubeloop.api._pod_warnings import pod_template_warnings
from kubeloop.api._quantity_fields import quantities_by_value
from kubeloop.api._statefulset_validation import (
    validate_statefulset,
    validate_statefulset_status_update,
    validate_statefulset_update,
)
from kubeloop.api._storage_warnings import statefulset_warnings
from kubeloop.api._validation import name_is_dns1123_label
from kubeloop.server._strategy import (
    _against_stored,
    _DecodesQuantities,
    _meta,
    _pod_name_warnings,
    _ZeroStatus,
)

__all__ = [
    "TEMPLATE_GENERATION_ANNOTATION", "WORKLOAD_STRATEGIES", "DaemonSetStrategy", "DeploymentStrategy", "JobStrategy",
    "PodTemplateOwnerStrategy", "ReplicaSetStrategy", "StatefulSetStrategy", "job_spec_warnings",
]  # fmt: skip


class PodTemplateOwnerStrategy(_DecodesQuantities, _ZeroStatus):
    """Deployments, ReplicaSets, StatefulSets: the zero status, the template's disabled fields dropped,
    and the pod template's rules (not on /status; each kind's subclass runs them inside its own checks).

    Deployments and ReplicaSets run ValidatePodTemplateSpec (ValidatePodTemplateSpecForReplicaSet, whose
    activeDeadlineSeconds message names a ReplicaSet for both); a StatefulSet's template skips
    ValidatePodSpec upstream (ValidatePodTemplateSpecForStatefulSet), its mounts may name claim templates.
    """

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        drop_disabled_template_fields(obj, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        # DropDisabledTemplateFields before the generation compares the specs (deployment strategy.go).
        drop_disabled_template_fields(new, old)
        super().prepare_for_update(new, old)

    def _template_errors(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        stateful = self.info.kind == "StatefulSet"
        return validate_pod_template(obj, kind="StatefulSet" if stateful else "ReplicaSet", old=old,
                                     check_spec=not stateful)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self._template_errors(obj, None)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [] if subresource == "status" else self._template_errors(new, old)

    # WarningsOnCreate / WarningsOnUpdate (deployment, replicaset and statefulset strategy.go): the pod
    # template's warnings on create, and on an update (``/scale`` included: ScaleREST updates through
    # the main strategy) only when the generation moved; the status strategies say nothing.
    warns = True

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return pod_template_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status" or _meta(new).get("generation") == _meta(old).get("generation"):
            return []
        return pod_template_warnings(new)


class StatefulSetStrategy(PodTemplateOwnerStrategy):
    """StatefulSets: DNS-1123 label names (ValidateStatefulSetName), ValidateStatefulSetSpec before the
    pod template's rules, ValidateStatefulSetUpdate's immutable spec, ValidateStatefulSetStatusUpdate on
    ``/status`` (:mod:`kubeloop.api._statefulset_validation`); ``rollingUpdate.maxUnavailable`` dropped
    unless stored (MaxUnavailableStatefulSet, alpha, off in 1.32); the claim templates' warnings."""

    name_validator = staticmethod(name_is_dns1123_label)

    @staticmethod
    def _drop_max_unavailable(new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """dropStatefulSetDisabledFields."""
        rolling = ((new.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")
        old_rolling = (((old or {}).get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")
        if isinstance(rolling, dict) and not (isinstance(old_rolling, dict) and old_rolling.get("maxUnavailable") is not None):
            rolling.pop("maxUnavailable", None)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        self._drop_max_unavailable(obj, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self._drop_max_unavailable(new, old)  # before the generation compares the specs
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return [*validate_statefulset(obj), *self._template_errors(obj, None)]

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_statefulset_status_update(new, old) if subresource == "status" else []
        errs = [*validate_statefulset(new), *self._template_errors(new, old)]
        return [*errs, *_against_stored(self.info, validate_statefulset_update, new, old)]

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*super().warnings_on_create(obj), *statefulset_warnings(obj, update=False)]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status":
            return []
        return [*super().warnings_on_update(new, old, subresource), *statefulset_warnings(new, update=True)]


# apps/v1 DeprecatedTemplateGeneration: where the v1 conversion keeps the internal spec.templateGeneration.
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: dict[str, Any]) -> int:
    value = (_meta(obj).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0


def _set_template_generation(obj: dict[str, Any], generation: int) -> None:
    meta = _meta(obj)
    annotations = meta.get("annotations")
    meta["annotations"] = {**(annotations if isinstance(annotations, dict) else {}),
                           TEMPLATE_GENERATION_ANNOTATION: str(generation)}


class DaemonSetStrategy(PodTemplateOwnerStrategy):
    """DaemonSets (``pkg/registry/apps/daemonset/strategy.go``): the zero status and generation 1 on
    create, with ``spec.templateGeneration`` at least 1; an update keeps the status and the template
    generation, and a changed template moves both the generation and the template generation (any
    other spec change only the generation). apps/v1 has no ``templateGeneration`` field: its conversion
    keeps it in the ``deprecated.daemonset.template.generation`` annotation (read back on decode,
    written on every encode), which is where it lives here. ValidateDaemonSet on create,
    the strategy's ValidateUpdate (:mod:`kubeloop.api._daemonset_validation`), ValidateDaemonSetStatusUpdate
    on ``/status``; the pod template's warnings on create and when the template generation moved."""

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(_template_generation(obj), 1))

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)  # the generation moves on any spec change
        generation = _template_generation(old)
        group, kind = self.info.group, self.info.kind
        template, stored = (new.get("spec") or {}).get("template"), (old.get("spec") or {}).get("template")
        if template != stored and ((quantities_by_value(group, kind, new).get("spec") or {}).get("template")
                                   != (quantities_by_value(group, kind, old).get("spec") or {}).get("template")):
            generation += 1
        _set_template_generation(new, generation)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_daemonset(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_daemonset_status_update(new, old) if subresource == "status" else []
        return validate_daemonset_update(new, old)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource or _template_generation(new) == _template_generation(old):
            return []
        return pod_template_warnings(new)


class DeploymentStrategy(PodTemplateOwnerStrategy):
    """Deployments: ValidateDeploymentSpec (its pod template's rules inside), the strategy's immutable
    selector on update (and on ``/scale``, which updates through the main strategy upstream: ScaleREST),
    ValidateDeploymentStatusUpdate on ``/status`` (:mod:`kubeloop.api._deployment_validation`), whose
    update keeps the stored labels as well as the spec (deploymentStatusStrategy.PrepareForUpdate)."""

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *super().warnings_on_create(obj)]

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        result = super().prepare_for_status_update(new, old)
        meta = _meta(result)  # a copy of the request's metadata (the generic step made it)
        if "labels" in _meta(old):
            meta["labels"] = _meta(old)["labels"]
        else:
            meta.pop("labels", None)
        return result

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_deployment(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_deployment_status_update(new, old)
        return validate_deployment_update(new, old)


class ReplicaSetStrategy(PodTemplateOwnerStrategy):
    """ReplicaSets: ValidateReplicaSetSpec, the ReplicaSet strategy's ValidateUpdate (the spec twice, the
    immutable selector) on update and ``/scale``, ValidateReplicaSetStatusUpdate on ``/status``."""

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *super().warnings_on_create(obj)]

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_replicaset(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_replicaset_status_update(new, old)
        return validate_replicaset_update(new, old)


class JobStrategy(PodTemplateOwnerStrategy):
    """Jobs (``pkg/registry/batch/job/strategy.go``): an empty status and generation 1 on create, the
    selector generated from the new Job's uid unless ``manualSelector`` (``generateSelector``: the
    ``batch.kubernetes.io/controller-uid`` selector, the template labelled with the uid and name under the
    prefixed and the legacy keys, a label already there kept for validation to judge), ``ValidateJob`` and
    ``ValidateJobUpdate``, and the status rules on ``/status`` (:mod:`kubeloop.api._job_validation`).

    A Job without labels takes its template's (SetDefaults_Job); upstream's read back from storage
    defaults again, after the selector's labels were added, so a Job created with none shows them: done
    here once they exist."""

    needs_identity = True

    def prepare_identity(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("manualSelector") is True:
            return
        meta = _meta(obj)
        uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
        template = spec.get("template")
        if not isinstance(template, dict):
            template = spec["template"] = {}
        template_meta = template.get("metadata")
        if not isinstance(template_meta, dict):
            template_meta = template["metadata"] = {}
        labels = template_meta.get("labels")
        if not isinstance(labels, dict):
            labels = template_meta["labels"] = {}
        for key, value in ((LEGACY_JOB_NAME_LABEL, name), (JOB_NAME_LABEL, name),
                           (LEGACY_CONTROLLER_UID_LABEL, uid), (CONTROLLER_UID_LABEL, uid)):
            labels.setdefault(key, value)
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        match = selector.get("matchLabels")
        if not isinstance(match, dict):
            match = selector["matchLabels"] = {}
        match.setdefault(CONTROLLER_UID_LABEL, uid)
        if not meta.get("labels"):
            meta["labels"] = dict(labels)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_job(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_job_status_update(new, old) if subresource == "status" else []
        return validate_job_update(new, old)

    # job strategy.go WarningsOnCreate (the name warning, then WarningsForJobSpec) and WarningsOnUpdate
    # (WarningsForJobSpec when the generation moved; the status strategy says nothing).
    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *job_spec_warnings(obj)]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status" or _meta(new).get("generation") == _meta(old).get("generation"):
            return []
        return job_spec_warnings(new)


def job_spec_warnings(job: dict[str, Any]) -> list[str]:
    """WarningsForJobSpec (k/k pkg/api/job/warnings.go): an Indexed Job past both soft limits (10^5
    completions, 10^4 parallelism), then the pod template's warnings under ``spec.template``."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    warnings: list[str] = []
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 100_000 \
            and isinstance(parallelism, int) and parallelism > 10_000:
        warnings.append("spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism "
                        "higher than 10^4, Kubernetes might not be able to track completedIndexes when a big "
                        "number of indexes fail")
    warnings.extend(pod_template_warnings(job))
    return warnings


WORKLOAD_STRATEGIES: dict[tuple[str, str], type[PodTemplateOwnerStrategy]] = {
    ("apps", "StatefulSet"): StatefulSetStrategy,
    ("apps", "Deployment"): DeploymentStrategy,
    ("apps", "DaemonSet"): DaemonSetStrategy,
    ("apps", "ReplicaSet"): ReplicaSetStrategy,
    ("batch", "Job"): JobStrategy,
}
