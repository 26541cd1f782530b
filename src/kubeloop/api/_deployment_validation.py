"""Validation of Deployments and ReplicaSets, as upstream's strategies run it (release 1.32).

Sources: k/k ``pkg/apis/apps/validation/validation.go`` and ``pkg/registry/apps/{deployment,replicaset}/
strategy.go``. ObjectMeta is checked by the write path; everything else is here, in upstream's order.

:func:`validate_deployment` is ``ValidateDeploymentSpec``: ``replicas`` not negative; ``selector``
required, valid and not empty; when the selector parses, ``ValidatePodTemplateSpecForReplicaSet``
(template labels matched by the selector, template labels and annotations, then the pod template's
rules of :func:`kubeloop.api._pod_spec_validation.validate_pod_template`, which end with
``restartPolicy`` Always and no ``activeDeadlineSeconds``), else ``invalid label selector``; the
strategy (``Recreate`` without ``rollingUpdate``; ``RollingUpdate`` with ``maxUnavailable`` and
``maxSurge`` each a non-negative integer or a percentage, not both 0, ``maxUnavailable`` at most
100%); ``minReadySeconds``, ``revisionHistoryLimit`` and ``progressDeadlineSeconds`` not negative, the
last greater than ``minReadySeconds``. ``spec.rollbackTo`` is not a field of apps/v1 (its decoding
drops it), so ``ValidateRollback`` never runs; ``paused`` has no rule.
:func:`validate_deployment_update` adds the strategy's check for apps/v1: the selector is immutable.

:func:`validate_replicaset` is ``ValidateReplicaSetSpec`` (``replicas`` and ``minReadySeconds``, then
the selector and template as above). :func:`validate_replicaset_update` is the ReplicaSet strategy's
``ValidateUpdate``: ``ValidateReplicaSet`` and ``ValidateReplicaSetUpdate`` each run that spec check,
so a bad spec's causes come twice (the message names each once), then the immutable selector.

:func:`validate_deployment_status_update` and :func:`validate_replicaset_status_update` are the
status strategies' checks: counts not negative, none above ``status.replicas``, ``availableReplicas``
not above ``readyReplicas``, and a Deployment's ``collisionCount`` never decremented.

Go values in messages print as ``field.Error`` prints them (see :mod:`kubeloop.api._workload_validation`):
an ``intstr.IntOrString`` as ``intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}``. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of, mapping_of
from kubeloop.api._pod_spec_validation import validate_pod_template
from kubeloop.api._workload_validation import (
    collision_count_errors,
    go_int_or_string,
    go_label_selector,
    go_string,
    immutable_selector,
    int_or_percent_value,
    nonnegative,
    not_more_than_100_percent,
    parsed_selector,
    positive_int_or_percent,
    selector_errors,
    template_metadata_errors,
)

_MORE_THAN_REPLICAS = "cannot be greater than status.replicas"

__all__ = [
    "validate_deployment",
    "validate_deployment_status_update",
    "validate_deployment_update",
    "validate_replicaset",
    "validate_replicaset_status_update",
    "validate_replicaset_update",
]


def _rolling_update_errors(rolling: Mapping[str, Any]) -> list[FieldError]:
    path = "spec.strategy.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = [*positive_int_or_percent(unavailable, f"{path}.maxUnavailable"),
            *positive_int_or_percent(surge, f"{path}.maxSurge")]
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        errs.append(FieldError("invalid", f"{path}.maxUnavailable",
                               f"{go_int_or_string(unavailable)}: may not be 0 when `maxSurge` is 0"))
    return [*errs, *not_more_than_100_percent(unavailable, f"{path}.maxUnavailable")]


def _strategy_errors(strategy: Mapping[str, Any]) -> list[FieldError]:
    """ValidateDeploymentStrategy."""
    kind = go_text(strategy.get("type"))
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is None:
            return []
        return [FieldError.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
    if kind == "RollingUpdate":
        if not isinstance(rolling, Mapping):  # defaulting always sets it
            return [FieldError.required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")]
        return _rolling_update_errors(rolling)
    pointer = "(*apps.RollingUpdateDeployment)" + ("(nil)" if rolling is None else "(0xc000000000)")
    return [FieldError("not_supported", "spec.strategy",
                       f"apps.DeploymentStrategy{{Type:{go_string(kind)}, RollingUpdate:{pointer}}}: "
                       'supported values: "Recreate", "RollingUpdate"')]


# -- specs -----------------------------------------------------------------------------------------------
def _selector_and_template_errors(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """The selector's rules, then ValidatePodTemplateSpecForReplicaSet (only once the selector parses)."""
    spec = mapping_of(obj.get("spec"))
    errs = selector_errors(spec, kind="deployment")
    parsed = parsed_selector(spec)
    if parsed is None:
        errs.append(FieldError("invalid", "spec.selector",
                               f"{go_label_selector(mapping_of(spec.get('selector')))}: invalid label selector"))
        return errs
    errs.extend(template_metadata_errors(spec, parsed))
    # ValidatePodTemplateSpecForReplicaSet names a ReplicaSet in the activeDeadlineSeconds message for both kinds.
    errs.extend(validate_pod_template(obj, kind="ReplicaSet", old=old))
    return errs


def validate_deployment(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """``ValidateDeploymentSpec`` (``old``, on update, relaxes the pod template's rules as upstream's options do)."""
    spec = mapping_of(obj.get("spec"))
    errs = nonnegative(spec.get("replicas"), "spec.replicas")
    errs.extend(_selector_and_template_errors(obj, old))
    errs.extend(_strategy_errors(mapping_of(spec.get("strategy"))))
    min_ready = int_of(spec.get("minReadySeconds")) or 0
    errs.extend(nonnegative(min_ready, "spec.minReadySeconds"))
    errs.extend(nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit"))
    deadline = int_of(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        errs.extend(nonnegative(deadline, "spec.progressDeadlineSeconds"))
        if deadline <= min_ready:
            errs.append(FieldError.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


def validate_replicaset(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """``ValidateReplicaSetSpec``."""
    spec = mapping_of(obj.get("spec"))
    errs = [*nonnegative(spec.get("replicas"), "spec.replicas"), *nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")]
    return [*errs, *_selector_and_template_errors(obj, old)]


def validate_deployment_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The Deployment strategy's ``ValidateUpdate``: ``ValidateDeploymentUpdate`` and the immutable selector."""
    return [*validate_deployment(new, old), *immutable_selector(new, old)]


def validate_replicaset_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The ReplicaSet strategy's ``ValidateUpdate`` (the spec's causes twice, see the module docstring)."""
    spec_errors = validate_replicaset(new, old)
    return [*spec_errors, *spec_errors, *immutable_selector(new, old)]


# -- status ----------------------------------------------------------------------------------------------
def _status_errors(new: Mapping[str, Any], counts: tuple[str, ...], bounded: tuple[str, ...]) -> list[FieldError]:
    status = mapping_of(new.get("status"))
    values = {key: int_of(status.get(key)) or 0 for key in counts}
    errs = [e for key in counts for e in nonnegative(values[key], f"status.{key}")]
    errs.extend(nonnegative(status.get("collisionCount"), "status.collisionCount"))
    for key in bounded:
        if values[key] > values["replicas"]:
            errs.append(FieldError.invalid(f"status.{key}", values[key], _MORE_THAN_REPLICAS))
    if values["availableReplicas"] > values["readyReplicas"]:
        errs.append(FieldError.invalid("status.availableReplicas", values["availableReplicas"],
                                       "cannot be greater than readyReplicas"))
    return errs


def validate_deployment_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateDeploymentStatusUpdate``: ``ValidateDeploymentStatus``, then the collision count."""
    errs = _status_errors(new, ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                "availableReplicas", "unavailableReplicas"),
                          ("updatedReplicas", "readyReplicas", "availableReplicas"))
    return [*errs, *collision_count_errors(new, old)]


def validate_replicaset_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateReplicaSetStatusUpdate`` (ReplicaSets have no collision count)."""
    return _status_errors(new, ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"),
                          ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"))
