"""A batch/v1 Job's validation, as k/k ``pkg/apis/batch/validation/validation.go`` (release 1.32) does it.

- :func:`validate_job` is ``ValidateJob`` on create (options as the job strategy sets them for a new
  Job: ``RequirePrefixedLabels``): the generated selector's labels on the template
  (``validateGeneratedSelector``), ``validateJobSpec`` (counts not negative, completion mode, the
  per-index fields only for Indexed Jobs, ``managedBy`` and ``podFailurePolicy``
  (:mod:`kubeloop.api._job_policy_validation`), ``podReplacementPolicy``, ``ValidatePodTemplateSpec`` and a
  restartPolicy of OnFailure or Never), the selector required and matching the template's labels, and an
  Indexed Job's largest pod hostname a DNS label.
- :func:`validate_job_update` is ``ValidateJobSpecUpdate``: the spec again, then ``completions``,
  ``selector``, ``template`` (its scheduling directives mutable while the Job is suspended and has never
  started: ``AllowMutableSchedulingDirectives``), ``completionMode``, ``podFailurePolicy``,
  ``backoffLimitPerIndex``, ``managedBy`` and ``successPolicy`` immutable; an Indexed Job's completions
  may change with parallelism (``ElasticIndexedJob``, GA in 1.31).
- :func:`validate_job_status_update` is ``ValidateJobStatusUpdate`` with the options the strategy sets when
  JobManagedBy (beta, on in 1.32) is enabled: counters not negative and not decreasing (``succeeded`` may
  decrease for an Indexed Job whose completions equal its parallelism: it can be scaled down), uncounted UIDs
  neither empty nor repeated, terminal conditions never disabled, Complete only with SuccessCriteriaMet,
  Failed only with FailureTarget, a finished Job with a start time, no active pods and no uncounted pods,
  completionTime only on a Complete Job and never changed, ``completedIndexes`` and ``failedIndexes``
  well formed, allowed and apart (:mod:`kubeloop.api._job_index_validation`) (each checked when the
  fields it reads changed);
  SuccessCriteriaMet never with Failed or FailureTarget and never disabled. With JobManagedBy and
  JobPodReplacementPolicy on, the strategy allows SuccessCriteriaMet on any Job
  (``AllowForSuccessCriteriaMetInExtendedScope``), as the controller sets it before Complete.

Known difference: upstream prints an immutable template's whole Go struct (``core.PodTemplateSpec{...}``)
in the message; here the message omits the value. Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._job_index_validation import index_status_errors
from kubeloop.api._job_policy_validation import managed_by_errors, pod_failure_policy_errors
from kubeloop.api._pod_fields import go_text, int_of, label_selector_errors, mapping_of
from kubeloop.api._pod_spec_validation import validate_pod_template
from kubeloop.api._pv_validation import semantic
from kubeloop.api._validation import (
    is_dns1123_label,
    validate_annotations,
    validate_labels,
)
from kubeloop.api._workload_validation import go_label_selector, go_string_map, nonnegative, parsed_selector

__all__ = [
    "CONTROLLER_UID_LABEL",
    "JOB_NAME_LABEL",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "job_spec_errors",
    "validate_job",
    "validate_job_status_update",
    "validate_job_update",
]

# k8s.io/api batch/v1 types.go.
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"

_MAX_PARALLELISM_INDEXED = 100000
_TEMPLATE_META = "spec.template.metadata"


def _has_label(labels: Mapping[str, Any], key: str, expected: str) -> list[FieldError]:
    """``ValidateHasLabel`` (path ``spec.template.metadata.labels[key]``)."""
    path = f"{_TEMPLATE_META}.labels[{key}]"
    if key not in labels:
        return [FieldError.required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [FieldError("invalid", path, f"{go_string_map(labels)}: must be '{expected}'")]
    return []


def _generated_selector_errors(job: Mapping[str, Any]) -> list[FieldError]:
    """``validateGeneratedSelector`` with ``RequirePrefixedLabels`` (a new Job, or one that has them)."""
    spec = mapping_of(job.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    meta = mapping_of(job.get("metadata"))
    uid, name = go_text(meta.get("uid")), go_text(meta.get("name"))
    errs = [FieldError.required("metadata.uid")] if not uid else []
    raw = mapping_of(mapping_of(spec.get("template")).get("metadata")).get("labels")
    labels = raw if isinstance(raw, Mapping) else {}
    errs += _has_label(labels, LEGACY_CONTROLLER_UID_LABEL, uid)
    errs += _has_label(labels, LEGACY_JOB_NAME_LABEL, name)
    errs += _has_label(labels, CONTROLLER_UID_LABEL, uid)
    errs += _has_label(labels, JOB_NAME_LABEL, name)
    expected = {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name, LEGACY_CONTROLLER_UID_LABEL: uid,
                LEGACY_JOB_NAME_LABEL: name}
    selector = parsed_selector(spec)
    if selector is not None and not selector.matches(expected):
        errs.append(FieldError("invalid", "spec.selector",
                               f"{go_label_selector(mapping_of(spec.get('selector')))}: `selector` not auto-generated"))
    return errs


def _restart_policy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    path = "spec.template.spec.restartPolicy"
    policy = go_text(mapping_of(mapping_of(spec.get("template")).get("spec")).get("restartPolicy"))
    if policy in ("Always", ""):  # SetDefaults_PodSpec makes an unset policy Always
        return [FieldError.required(path, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [FieldError.not_supported(path, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [FieldError.invalid(path, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _job_spec_errors(job: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """``validateJobSpec`` (a success policy's own rules are not checked here)."""
    spec = mapping_of(job.get("spec"))
    errs: list[FieldError] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex"):
        errs += nonnegative(spec.get(key), f"spec.{key}")
    max_failed = int_of(spec.get("maxFailedIndexes"))
    if max_failed is not None:
        errs += nonnegative(max_failed, "spec.maxFailedIndexes")
        if spec.get("backoffLimitPerIndex") is None:
            errs.append(FieldError.required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    errs += managed_by_errors(spec.get("managedBy"))
    mode = spec.get("completionMode")
    completions, parallelism = int_of(spec.get("completions")), int_of(spec.get("parallelism"))
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(FieldError.not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(FieldError.required("spec.completions", "when completion mode is Indexed"))
            if parallelism is not None and parallelism > _MAX_PARALLELISM_INDEXED:
                errs.append(FieldError.invalid("spec.parallelism", parallelism,
                                               f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} "
                                               "when completion mode is Indexed"))
            if completions is not None and max_failed is not None and max_failed > completions:
                errs.append(FieldError.invalid("spec.maxFailedIndexes", max_failed, "must be less than or equal to completions"))
    if mode is None or mode == "NonIndexed":
        per_index = int_of(spec.get("backoffLimitPerIndex"))
        if per_index is not None:
            errs.append(FieldError.invalid("spec.backoffLimitPerIndex", per_index, "requires indexed completion mode"))
        if max_failed is not None:
            errs.append(FieldError.invalid("spec.maxFailedIndexes", max_failed, "requires indexed completion mode"))
    if spec.get("podFailurePolicy") is not None:
        errs += pod_failure_policy_errors(spec)
    if spec.get("successPolicy") is not None and mode != "Indexed":
        errs.append(FieldError("invalid", "spec.successPolicy", "requires indexed completion mode"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if spec.get("podFailurePolicy") is not None:
            if replacement != "Failed":
                errs.append(FieldError.not_supported("spec.podReplacementPolicy", replacement, ["Failed"]))
        elif replacement not in ("Failed", "TerminatingOrFailed"):
            errs.append(FieldError.not_supported("spec.podReplacementPolicy", replacement, ["Failed", "TerminatingOrFailed"]))
    # ValidatePodTemplateSpec: the template's labels and annotations, then the pod spec's rules.
    template_meta = mapping_of(mapping_of(spec.get("template")).get("metadata"))
    labels, annotations = template_meta.get("labels"), template_meta.get("annotations")
    errs += validate_labels(labels if isinstance(labels, Mapping) else None, "spec.template.labels")
    errs += validate_annotations(annotations if isinstance(annotations, Mapping) else None, "spec.template.annotations")
    errs += validate_pod_template(job, kind="Job", old=old, workload_rules=False)
    return [*errs, *_restart_policy_errors(spec)]


def job_spec_errors(job: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """``validateJobSpec`` of a Job-shaped object (paths under ``spec``): a CronJob's job template has
    these rules and not the selector's (``ValidateJobTemplateSpec``)."""
    return _job_spec_errors(job, old)


def _spec_errors(job: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """``ValidateJobSpec``: ``validateJobSpec``, the selector, and the selector matching the template."""
    spec = mapping_of(job.get("spec"))
    errs = _job_spec_errors(job, old)
    selector = spec.get("selector")
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
    else:
        errs += label_selector_errors(selector, "spec.selector", allow_invalid_values=False)
    parsed = parsed_selector(spec) if selector is not None else None
    if parsed is not None:
        raw = mapping_of(mapping_of(spec.get("template")).get("metadata")).get("labels")
        labels = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        if not parsed.matches(labels):
            errs.append(FieldError("invalid", "spec.template.metadata.labels",
                                   f"{go_string_map(raw)}: `selector` does not match template `labels`"))
    return errs


def validate_job(job: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateJob`` beyond ObjectMeta (which the write path checks first)."""
    errs = [*_generated_selector_errors(job), *_spec_errors(job, None)]
    spec = mapping_of(job.get("spec"))
    completions = int_of(spec.get("completions"))
    if spec.get("completionMode") == "Indexed" and completions is not None and completions > 0:
        # The controller names an Indexed Job's pods' hostnames <job>-<index>.
        name = go_text(mapping_of(job.get("metadata")).get("name"))
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(FieldError.invalid("metadata.name", name,
                                           f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _immutable(new: Any, old: Any, path: str, *, show: bool = True) -> list[FieldError]:
    """``ValidateImmutableField`` (``Semantic.DeepEqual``; a nil pointer prints as "null")."""
    if new == old or (new is not None and old is not None and semantic(new) == semantic(old)):
        return []
    if not show:
        return [FieldError("invalid", path, "field is immutable")]
    if isinstance(new, Mapping) and path == "spec.selector":
        return [FieldError("invalid", path, f"{go_label_selector(new)}: field is immutable")]
    return [FieldError.invalid(path, "null" if new is None else new, "field is immutable")]


def _scheduling_relaxed(template: Any, old_template: Any) -> Any:
    """``validatePodTemplateUpdate`` with AllowMutableSchedulingDirectives: the old template with the new one's
    node affinity, node selector, tolerations, labels, annotations and scheduling gates."""
    new_t, old_t = mapping_of(template), dict(mapping_of(old_template))
    new_spec, old_spec = mapping_of(new_t.get("spec")), dict(mapping_of(old_t.get("spec")))
    affinity, old_affinity = new_spec.get("affinity"), old_spec.get("affinity")
    if affinity is None and isinstance(old_affinity, Mapping):
        rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        old_spec["affinity"] = rest if any(v is not None for v in rest.values()) else None
    elif isinstance(affinity, Mapping) and old_affinity is None:
        old_spec["affinity"] = {"nodeAffinity": affinity.get("nodeAffinity")}
    elif isinstance(affinity, Mapping) and isinstance(old_affinity, Mapping):
        old_spec["affinity"] = {**old_affinity, "nodeAffinity": affinity.get("nodeAffinity")}
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        old_spec[key] = new_spec.get(key)
    old_meta = dict(mapping_of(old_t.get("metadata")))
    new_meta = mapping_of(new_t.get("metadata"))
    old_meta["labels"], old_meta["annotations"] = new_meta.get("labels"), new_meta.get("annotations")
    return {**old_t, "metadata": old_meta, "spec": old_spec}


def _completions_errors(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
    """``validateCompletions`` with AllowElasticIndexedJobs."""
    new, old = spec.get("completions"), old_spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        return _immutable(new, old, "spec.completions")
    if new == old or new is None:
        return []
    if new != spec.get("parallelism"):
        return [FieldError.invalid("spec.completions", new, "can only be modified in tandem with spec.parallelism")]
    return []


def validate_job_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateJobSpecUpdate`` (ObjectMeta's update rules are the write path's)."""
    spec, old_spec = mapping_of(new.get("spec")), mapping_of(old.get("spec"))
    errs = _spec_errors(new, old)
    errs += _completions_errors(spec, old_spec)
    errs += _immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
    old_template = old_spec.get("template")
    # The job strategy: a suspended Job that never started may change where its pods would run.
    if spec.get("suspend") is True and mapping_of(old.get("status")).get("startTime") is None:
        old_template = _scheduling_relaxed(spec.get("template"), old_template)
    errs += _immutable(spec.get("template"), old_template, "spec.template", show=False)
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs += _immutable(spec.get(key), old_spec.get(key), f"spec.{key}", show=not isinstance(spec.get(key), Mapping))
    return errs


def _true(status: Mapping[str, Any], kind: str) -> bool:
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or ())


def _uncounted_errors(status: Mapping[str, Any]) -> list[FieldError]:
    uncounted = mapping_of(status.get("uncountedTerminatedPods"))
    seen: set[str] = set()
    errs: list[FieldError] = []
    for part in ("succeeded", "failed"):
        for i, uid in enumerate(uncounted.get(part) or ()):
            path = f"status.uncountedTerminatedPods.{part}[{i}]"
            if not uid:
                errs.append(FieldError.invalid(path, "", "must not be empty"))
            elif uid in seen:
                errs.append(FieldError.duplicate(path, uid))
            else:
                seen.add(uid)
    return errs


def _has_uncounted(status: Mapping[str, Any]) -> bool:
    uncounted = mapping_of(status.get("uncountedTerminatedPods"))
    return bool(uncounted.get("succeeded") or uncounted.get("failed"))


def validate_job_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateJobStatusUpdate`` (a subset of the JobManagedBy options: see the module docstring)."""
    status, old_status = mapping_of(new.get("status")), mapping_of(old.get("status"))
    errs: list[FieldError] = []
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        errs += nonnegative(status.get(key), f"status.{key}")
    errs += _uncounted_errors(status)
    complete, failed = _true(status, "Complete"), _true(status, "Failed")
    finished = complete or failed
    complete_changed = complete != _true(old_status, "Complete")
    failed_changed = failed != _true(old_status, "Failed")
    finished_changed = finished != (_true(old_status, "Complete") or _true(old_status, "Failed"))
    target_changed = _true(status, "FailureTarget") != _true(old_status, "FailureTarget")
    completion, old_completion = status.get("completionTime"), old_status.get("completionTime")
    start_changed = status.get("startTime") != old_status.get("startTime")
    completion_changed = completion != old_completion
    if (complete_changed or failed_changed) and complete and failed:
        errs.append(FieldError("invalid", "status.conditions", "cannot set Complete=True and Failed=true conditions"))
    if (complete_changed or target_changed) and complete and _true(status, "FailureTarget"):
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set Complete=True and FailureTarget=true conditions"))
    if (complete_changed or completion_changed) and completion is not None and not complete:
        errs.append(FieldError.invalid("status.completionTime", completion,
                                       "cannot set completionTime when there is no Complete=True condition"))
    if (complete_changed or completion_changed) and completion is None and complete:
        errs.append(FieldError.required("status.completionTime", "completionTime is required for Complete jobs"))
    if failed_changed and failed and not _true(status, "FailureTarget"):
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set Failed=True condition without the FailureTarget=true condition"))
    if complete_changed and complete and not _true(status, "SuccessCriteriaMet"):
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"))
    active = int_of(status.get("active")) or 0
    if (finished_changed or active != (int_of(old_status.get("active")) or 0)) and active > 0 and finished:
        errs.append(FieldError.invalid("status.active", active, "active>0 is invalid for finished job"))
    if (finished_changed or start_changed) and status.get("startTime") is None and finished:
        errs.append(FieldError.required("status.startTime", "startTime is required for finished job"))
    if (finished_changed or status.get("uncountedTerminatedPods") != old_status.get("uncountedTerminatedPods")) \
            and finished and _has_uncounted(status):
        errs.append(FieldError("invalid", "status.uncountedTerminatedPods",
                               "uncountedTerminatedPods needs to be empty for finished job"))
    errs += index_status_errors(new, old)
    met, old_met = _true(status, "SuccessCriteriaMet"), _true(old_status, "SuccessCriteriaMet")
    if met and failed:
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if met and _true(status, "FailureTarget"):
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
    if mapping_of(new.get("spec")).get("successPolicy") is not None and not met and complete:
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
    for kind in ("Failed", "Complete", "FailureTarget"):
        if _true(old_status, kind) and not _true(status, kind):
            errs.append(FieldError("invalid", "status.conditions", f"cannot disable the terminal {kind}=True condition"))
    # registry/batch/job/strategy.go (statusStrategy): RejectDecreasingSucceededCounter is
    # ``!isIndexed || !ptr.Equal(completions, parallelism)``: an Indexed Job scaled down in tandem drops the
    # succeeded indexes past its new completions, so its succeeded counter may go down.
    spec = mapping_of(new.get("spec"))
    scalable = spec.get("completionMode") == "Indexed" and spec.get("completions") == spec.get("parallelism")
    for key in ("failed", "succeeded"):
        now, before = int_of(status.get(key)) or 0, int_of(old_status.get(key)) or 0
        if now < before and not (key == "succeeded" and scalable):
            errs.append(FieldError.invalid(f"status.{key}", now, f"cannot decrease the {key} counter"))
    if completion is not None and old_completion is not None and completion != old_completion:
        errs.append(FieldError.invalid("status.completionTime", completion, "completionTime cannot be mutated"))
    if old_met and not met:
        errs.append(FieldError("invalid", "status.conditions", "cannot disable the SuccessCriteriaMet=True condition"))
    if _true(old_status, "Complete") and not old_met and met:
        errs.append(FieldError("invalid", "status.conditions",
                               "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
    return errs
