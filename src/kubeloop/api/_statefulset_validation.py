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
prints the same text (:mod:`kubeloop.api._workload_validation`: ``field.Error`` dereferences the
pointer it is given); a pointer to a struct inside a struct prints upstream as an address, here as
``0xc000000000``. Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of, mapping_of
from kubeloop.api._pv_validation import semantic
from kubeloop.api._workload_validation import (
    collision_count_errors,
    go_label_selector,
    go_string,
    nonnegative,
    parsed_selector,
    selector_errors,
    template_metadata_errors,
)

__all__ = ["validate_statefulset", "validate_statefulset_status_update", "validate_statefulset_update"]

_RETENTION = ["Retain", "Delete"]
# What ValidateStatefulSetUpdate takes from the stored spec before it compares the two.
_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "persistentVolumeClaimRetentionPolicy")
_FORBIDDEN_UPDATE = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                     "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


def _go_rolling_update(rolling: Mapping[str, Any]) -> str:
    """A ``*apps.RollingUpdateStatefulSetStrategy`` as ``field.Error`` prints it: dereferenced, with ``%#v``
    (``maxUnavailable``, behind an alpha feature gate, is dropped before validation)."""
    partition = int_of(rolling.get("partition")) or 0
    return f"apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, MaxUnavailable:(*intstr.IntOrString)(nil)}}"


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
        return nonnegative(rolling.get("partition"), f"{path}.rollingUpdate.partition") if isinstance(rolling, Mapping) else []
    pointer = "(*apps.RollingUpdateStatefulSetStrategy)" + ("(0xc000000000)" if isinstance(rolling, Mapping) else "(nil)")
    return [FieldError("invalid", path, f"apps.StatefulSetUpdateStrategy{{Type:{go_string(kind)}, RollingUpdate:{pointer}}}: "
                                        "must be 'RollingUpdate' or 'OnDelete'")]


def _selector_and_template_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    errs = selector_errors(spec, kind="statefulset")
    parsed = parsed_selector(spec)
    if parsed is None:  # LabelSelectorAsSelector failed: ValidateLabelSelector said why
        errs.append(FieldError("invalid", "spec.selector", go_label_selector(mapping_of(spec.get("selector")))))
        return errs
    return [*errs, *template_metadata_errors(spec, parsed)]


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
    errs.extend(nonnegative(spec.get("replicas"), "spec.replicas"))
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, Mapping):
        errs.extend(nonnegative(ordinals.get("start"), "spec.ordinals.start"))
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
    errs = [e for key, value in counts.items() for e in nonnegative(value, f"status.{key}")]
    for key in ("observedGeneration", "collisionCount"):
        errs.extend(nonnegative(status.get(key), f"status.{key}"))
    replicas = counts["replicas"]
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        if counts[key] > replicas:
            errs.append(FieldError.invalid(f"status.{key}", counts[key], "cannot be greater than status.replicas"))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid("status.availableReplicas", counts["availableReplicas"],
                                       "cannot be greater than status.readyReplicas"))
    return [*errs, *collision_count_errors(new, old)]
