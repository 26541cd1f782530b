"""Validation of core/v1 ReplicationControllers and PodTemplates, as upstream's strategies run it (1.32).

Sources: k/k ``pkg/apis/core/validation/validation.go`` (``ValidateReplicationController``,
``ValidateReplicationControllerSpec``, ``ValidatePodTemplateSpecForRC``, ``ValidateNonEmptySelector``,
``ValidateReplicationControllerStatus``, ``ValidatePodTemplate``, ``ValidatePodTemplateUpdate``) and
``pkg/registry/core/{replicationcontroller,podtemplate}/strategy.go``. ObjectMeta is the write path's.

:func:`validate_replication_controller` is ``ValidateReplicationControllerSpec``, in its order:
``minReadySeconds`` and then ``replicas`` not negative around a required, non-empty ``selector`` (a
label map, not a LabelSelector); a required ``template`` whose labels the selector matches
(``spec.template.metadata.labels``), then ``ValidatePodTemplateSpec`` at ``spec.template`` and the
template rules of a replicated pod: ``restartPolicy`` Always, no ``activeDeadlineSeconds``
(:func:`kubeloop.api._pod_spec_validation.validate_pod_template`). The strategy's ``ValidateUpdate``
runs ``ValidateReplicationController`` and ``ValidateReplicationControllerUpdate``, each with that spec
check, so a bad spec's causes come twice (:func:`validate_replication_controller_update`); unlike a
ReplicaSet's, the selector may change, unless the stored RC has a ``non-convertible.kubernetes.io/...selector``
annotation (``cannot update non-convertible selector``; any other such annotation is an unknown field). :func:`validate_replication_controller_status_update` is
``ValidateReplicationControllerStatus``: counts not negative, none above ``status.replicas``,
``availableReplicas`` not above ``readyReplicas``.

:func:`validate_pod_template_object` is ``ValidatePodTemplate`` / ``ValidatePodTemplateUpdate`` of a
PodTemplate: ``ValidatePodTemplateSpec`` of its top-level ``template`` (no workload rules: any restart
policy). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import int_of, mapping_of
from kubeloop.api._pod_spec_validation import validate_pod_template
from kubeloop.api._validation import validate_annotations, validate_labels
from kubeloop.api._workload_validation import go_string_map, nonnegative

__all__ = [
    "as_template_owner",
    "template_paths",
    "validate_pod_template_object",
    "validate_replication_controller",
    "validate_replication_controller_status_update",
    "validate_replication_controller_update",
]


def _template_errors(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """ValidatePodTemplateSpecForRC."""
    spec = mapping_of(obj.get("spec"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [FieldError.required("spec.template")]
    selector = spec.get("selector")
    selector_map = {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {}
    meta = mapping_of(template.get("metadata"))
    labels = meta.get("labels")
    errs: list[FieldError] = []
    string_labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    if selector_map and not all(string_labels.get(k) == v for k, v in selector_map.items()):
        errs.append(FieldError("invalid", "spec.template.metadata.labels",
                               f"{go_string_map(labels)}: `selector` does not match template `labels`"))
    # ValidatePodTemplateSpec: the labels and annotations (named without "metadata"), then the pod spec's rules.
    errs.extend(validate_labels(labels if isinstance(labels, Mapping) else None, "spec.template.labels"))
    annotations = meta.get("annotations")
    errs.extend(validate_annotations(annotations if isinstance(annotations, Mapping) else None,
                                     "spec.template.annotations"))
    errs.extend(validate_pod_template(obj, kind="ReplicationController", old=old))
    return errs


def validate_replication_controller(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """``ValidateReplicationControllerSpec`` (``old``, on update, relaxes the pod template's rules as
    ``GetValidationOptionsFromPodTemplate`` does)."""
    spec = mapping_of(obj.get("spec"))
    errs = nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    if not spec.get("selector"):  # ValidateNonEmptySelector: labels.Set(selector).AsSelector().Empty()
        errs.append(FieldError.required("spec.selector"))
    errs.extend(nonnegative(spec.get("replicas"), "spec.replicas"))
    return [*errs, *_template_errors(obj, old)]


# core.NonConvertibleAnnotationPrefix: what an old extensions/v1beta1 conversion could not carry.
_NON_CONVERTIBLE = "non-convertible.kubernetes.io"


def _non_convertible_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The strategy's check of the stored RC's ``non-convertible.kubernetes.io/<field>`` annotations
    (``helper.NonConvertibleFields``): a ``...selector`` one freezes the selector, any other is an unknown
    field. Go ranges over the map in no order; here the keys are sorted."""
    annotations = mapping_of(mapping_of(old.get("metadata")).get("annotations"))
    errs: list[FieldError] = []
    for key in sorted(k for k in annotations if isinstance(k, str) and k.startswith(_NON_CONVERTIBLE)):
        parts = key.split("/")
        if len(parts) != 2:
            continue
        if "selector" in parts[1]:
            selector = mapping_of(new.get("spec")).get("selector")
            if selector != mapping_of(old.get("spec")).get("selector"):
                errs.append(FieldError("invalid", "spec.selector",
                                       f"{go_string_map(selector)}: cannot update non-convertible selector"))
        else:
            errs.append(FieldError("not_found", parts[1], "unknown non-convertible field", annotations[key]))
    return errs


def validate_replication_controller_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The strategy's ``ValidateUpdate``: the spec's causes twice (see the module docstring), then the
    stored RC's non-convertible annotations."""
    errs = validate_replication_controller(new, old)
    return [*errs, *errs, *_non_convertible_errors(new, old)]


def validate_replication_controller_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateReplicationControllerStatus`` (``old`` is not read: nothing there must not decrease)."""
    status = mapping_of(new.get("status"))
    keys = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")
    values = {key: int_of(status.get(key)) or 0 for key in keys}
    errs = [e for key in keys for e in nonnegative(values[key], f"status.{key}")]
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if values[key] > values["replicas"]:
            errs.append(FieldError.invalid(f"status.{key}", values[key], "cannot be greater than status.replicas"))
    if values["availableReplicas"] > values["readyReplicas"]:
        errs.append(FieldError.invalid("status.availableReplicas", values["availableReplicas"],
                                       "cannot be greater than readyReplicas"))
    return errs


# -- PodTemplate ---------------------------------------------------------------------------------------------
def as_template_owner(pod_template: Mapping[str, Any]) -> dict[str, Any]:
    """A view of a PodTemplate shaped like a workload (its ``template`` at ``spec.template``, the same dict,
    so an in-place change reaches the PodTemplate), for the helpers written for workloads."""
    template = pod_template.get("template")
    return {"spec": {"template": template}} if isinstance(template, dict) else {"spec": {}}


def template_paths(errors: list[FieldError]) -> list[FieldError]:
    """Workload paths (``spec.template...``) named as a PodTemplate's (``template...``)."""
    return [replace(e, field=e.field[len("spec."):]) if e.field.startswith("spec.template") else e for e in errors]


def validate_pod_template_object(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """``ValidatePodTemplate`` (``old`` on update: ``ValidatePodTemplateUpdate``, whose template check is the same)."""
    template = mapping_of(obj.get("template"))
    meta = mapping_of(template.get("metadata"))
    labels, annotations = meta.get("labels"), meta.get("annotations")
    errs = validate_labels(labels if isinstance(labels, Mapping) else None, "template.labels")
    errs.extend(validate_annotations(annotations if isinstance(annotations, Mapping) else None, "template.annotations"))
    owner = as_template_owner(obj)
    old_owner = as_template_owner(old) if old is not None else None
    errs.extend(template_paths(validate_pod_template(owner, kind="PodTemplate", old=old_owner, workload_rules=False)))
    return errs

