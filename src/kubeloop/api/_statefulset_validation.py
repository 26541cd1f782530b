"""Validation of a StatefulSet's own fields, as upstream's statefulset strategy runs it (release 1.32).

:func:`validate_statefulset` is ``ValidateStatefulSetSpec`` (k/k ``pkg/apis/apps/validation/validation.go``;
the strategy is ``pkg/registry/apps/statefulset/strategy.go``) without the pod template rules, which
:func:`kubeloop.api._pod_spec_validation.validate_pod_template` checks after it; in upstream's order:
``podManagementPolicy`` required and ``OrderedReady`` or ``Parallel``; ``updateStrategy`` required,
``RollingUpdate`` (a ``partition`` not negative) or ``OnDelete`` (without ``rollingUpdate``); each
half of ``persistentVolumeClaimRetentionPolicy`` ``Retain`` or ``Delete``; ``replicas``,
``minReadySeconds`` and ``ordinals.start`` not negative; a ``selector`` that is required, valid and
not empty; a template whose labels the selector matches, with valid labels and annotations.
``volumeClaimTemplates`` are not validated upstream (the claims the controller makes from them are).

:func:`validate_statefulset_update` is the rest of ``ValidateStatefulSetUpdate`` (which first runs
those checks and the template's): the spec compared, as ``Semantic.DeepEqual`` does, with the stored one once the fields an update may change
(``replicas``, ``template``, ``updateStrategy``, ``minReadySeconds``, ``ordinals``,
``persistentVolumeClaimRetentionPolicy``) are taken from it: any other change (``volumeClaimTemplates``,
``selector``, ``serviceName``, ``podManagementPolicy``, ``revisionHistoryLimit``) is forbidden.

:func:`validate_statefulset_status_update` is ``ValidateStatefulSetStatusUpdate``'s checks of the status.

Where upstream prints a Go value with ``%#v`` (a label map, a selector, an update strategy), this
prints the same text; a pointer to a struct inside a struct prints upstream as an address, here as
``0xc000000000``. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import ApiError, FieldError
from kubeloop.api._pod_fields import go_text, int_of, label_selector_errors, mapping_of
from kubeloop.api._pv_validation import semantic
from kubeloop.api._selectors import label_selector_from_dict
from kubeloop.api._validation import validate_annotations, validate_labels

__all__ = ["validate_statefulset", "validate_statefulset_status_update", "validate_statefulset_update"]

_NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
_RETENTION = ["Retain", "Delete"]
# What ValidateStatefulSetUpdate takes from the stored spec before it compares the two.
_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "persistentVolumeClaimRetentionPolicy")
_FORBIDDEN_UPDATE = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                     "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


def _go(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else json.dumps(str(value))


def _go_string_map(value: Any) -> str:
    """``%#v`` of a ``map[string]string`` (Go prints map keys sorted)."""
    if not isinstance(value, Mapping):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{_go(k)}:{_go(value[k])}" for k in sorted(value)) + "}"


def _go_strings(value: Any) -> str:
    if not isinstance(value, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go(v) for v in value) + "}"


def _go_selector(selector: Mapping[str, Any]) -> str:
    """``%#v`` of a ``*metav1.LabelSelector``."""
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        items = ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{_go(go_text(e.get('key')))}, Operator:{_go(go_text(e.get('operator')))}, "
            f"Values:{_go_strings(e.get('values'))}}}" for e in expressions if isinstance(e, Mapping))
        shown = f"[]v1.LabelSelectorRequirement{{{items}}}"
    else:
        shown = "[]v1.LabelSelectorRequirement(nil)"
    return f"&v1.LabelSelector{{MatchLabels:{_go_string_map(selector.get('matchLabels'))}, MatchExpressions:{shown}}}"


def _go_rolling_update(rolling: Mapping[str, Any]) -> str:
    """``%#v`` of a ``*apps.RollingUpdateStatefulSetStrategy`` (``maxUnavailable``, behind an alpha feature
    gate, is dropped before validation)."""
    partition = int_of(rolling.get("partition")) or 0
    return f"&apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, MaxUnavailable:(*intstr.IntOrString)(nil)}}"


def _nonnegative(value: Any, path: str) -> list[FieldError]:
    number = int_of(value)
    return [FieldError.invalid(path, number, _NEGATIVE)] if number is not None and number < 0 else []


def _update_strategy_errors(strategy: Mapping[str, Any]) -> list[FieldError]:
    kind = go_text(strategy.get("type"))
    rolling = strategy.get("rollingUpdate")
    path = "spec.updateStrategy"
    if not kind:
        return [FieldError.required(path)]
    if kind == "OnDelete":
        if isinstance(rolling, Mapping):
            return [FieldError("invalid", f"{path}.rollingUpdate",
                               f"{_go_rolling_update(rolling)}: only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind == "RollingUpdate":
        return _nonnegative(rolling.get("partition"), f"{path}.rollingUpdate.partition") if isinstance(rolling, Mapping) else []
    pointer = "(*apps.RollingUpdateStatefulSetStrategy)" + ("(0xc000000000)" if isinstance(rolling, Mapping) else "(nil)")
    return [FieldError("invalid", path, f"apps.StatefulSetUpdateStrategy{{Type:{_go(kind)}, RollingUpdate:{pointer}}}: "
                                        "must be 'RollingUpdate' or 'OnDelete'")]


def _selector_and_template_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    selector = spec.get("selector")
    errs: list[FieldError] = []
    if selector is None:
        errs.append(FieldError.required("spec.selector"))
    elif isinstance(selector, Mapping):
        errs.extend(label_selector_errors(selector, "spec.selector", allow_invalid_values=False))
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            errs.append(FieldError("invalid", "spec.selector",
                                   f"{_go_selector(selector)}: empty selector is invalid for statefulset"))
    template_meta = mapping_of(mapping_of(spec.get("template")).get("metadata"))
    labels = template_meta.get("labels")
    try:
        parsed = label_selector_from_dict(selector if isinstance(selector, Mapping) else None)
    except ApiError:  # LabelSelectorAsSelector failed: ValidateLabelSelector said why
        errs.append(FieldError("invalid", "spec.selector", _go_selector(mapping_of(selector))))
        return errs
    # A missing selector is labels.Nothing(): not empty, and it matches no labels.
    string_labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    if not parsed.empty and not parsed.matches(string_labels):
        errs.append(FieldError("invalid", "spec.template.metadata.labels",
                               f"{_go_string_map(labels)}: `selector` does not match template `labels`"))
    errs.extend(validate_labels(labels if isinstance(labels, Mapping) else None, "spec.template.labels"))
    annotations = template_meta.get("annotations")
    errs.extend(validate_annotations(annotations if isinstance(annotations, Mapping) else None, "spec.template.annotations"))
    return errs


def validate_statefulset(obj: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateStatefulSetSpec`` up to, not including, the pod template's own rules (see the module docstring)."""
    spec = mapping_of(obj.get("spec"))
    errs: list[FieldError] = []
    policy = go_text(spec.get("podManagementPolicy"))
    if not policy:
        errs.append(FieldError.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(FieldError.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs.extend(_update_strategy_errors(mapping_of(spec.get("updateStrategy"))))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, Mapping):
        for key in ("whenDeleted", "whenScaled"):
            value = go_text(retention.get(key))
            if value not in _RETENTION:
                errs.append(FieldError.not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", value, _RETENTION))
    errs.extend(_nonnegative(spec.get("replicas"), "spec.replicas"))
    errs.extend(_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, Mapping):
        errs.extend(_nonnegative(ordinals.get("start"), "spec.ordinals.start"))
    errs.extend(_selector_and_template_errors(spec))
    return errs


def _changed_beyond_mutable(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether ``new``'s spec differs from ``old``'s in a field an update may not change."""
    new_spec, old_spec = mapping_of(new.get("spec")), mapping_of(old.get("spec"))
    clone = {k: v for k, v in new_spec.items() if k not in _MUTABLE}
    stored = {k: v for k, v in old_spec.items() if k not in _MUTABLE}
    return clone != stored and semantic(clone) != semantic(stored)


def validate_statefulset_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The part of ``ValidateStatefulSetUpdate`` after ``ValidateStatefulSetSpec``: the spec may change only
    in the fields the module docstring lists."""
    return [FieldError.forbidden("spec", _FORBIDDEN_UPDATE)] if _changed_beyond_mutable(new, old) else []


def validate_statefulset_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateStatefulSetStatus`` and the collision count that may not go down."""
    status = mapping_of(new.get("status"))
    counts = {key: int_of(status.get(key)) or 0
              for key in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")}
    errs = [e for key, value in counts.items() for e in _nonnegative(value, f"status.{key}")]
    for key in ("observedGeneration", "collisionCount"):
        errs.extend(_nonnegative(status.get(key), f"status.{key}"))
    replicas = counts["replicas"]
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        if counts[key] > replicas:
            errs.append(FieldError.invalid(f"status.{key}", counts[key], "cannot be greater than status.replicas"))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid("status.availableReplicas", counts["availableReplicas"],
                                       "cannot be greater than status.readyReplicas"))
    new_count, old_count = int_of(status.get("collisionCount")), int_of(mapping_of(old.get("status")).get("collisionCount"))
    if old_count is not None and (new_count is None or new_count < old_count):  # IsDecremented
        errs.append(FieldError.invalid("status.collisionCount", new_count or 0, "cannot be decremented"))
    return errs
