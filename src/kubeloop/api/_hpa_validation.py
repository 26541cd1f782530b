"""An autoscaling/v2 HorizontalPodAutoscaler's validation, as k/k ``pkg/apis/autoscaling/validation/validation.go``
(release 1.32) does it on the internal object (an autoscaling/v1 body is converted to v2 first, so its errors
name the v2 fields, as upstream's do).

- :func:`validate_hpa` is ``ValidateHorizontalPodAutoscaler`` beyond ObjectMeta (the write path checks that,
  with the DNS-subdomain name rule of ``ValidateReplicationControllerName``): the spec with ``minReplicas`` at
  least 1 (the HPAScaleToZero gate is alpha and off in 1.32);
- :func:`validate_hpa_update` is ``ValidateHorizontalPodAutoscalerUpdate``: the same, except that an HPA that
  already has ``minReplicas: 0`` may keep it;
- :func:`validate_hpa_status` is ``ValidateHorizontalPodAutoscalerStatusUpdate``: ``currentReplicas`` and
  ``desiredReplicas`` not negative.

``validateHorizontalPodAutoscalerSpec``: ``minReplicas`` >= the lower bound, ``maxReplicas`` > 0 and >=
``minReplicas``, ``scaleTargetRef`` kind and name required and valid path segments, each metric
(``validateMetricSpec``: type among Object, Pods, Resource, External, ContainerResource; exactly the member of
its type set; the source's identifier and target rules), ``minReplicas: 0`` only with an Object or External
metric, and ``behavior`` (``validateScalingRules``: stabilization window 0..3600, selectPolicy Max, Min or
Disabled, at least one policy, each Pods or Percent with a positive value and a period 1..1800).

Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import as_list, go_text, mapping_of
from kubeloop.api._pod_resources_validation import _resource_name_errors
from kubeloop.api._quantity import QuantityError, parse_quantity
from kubeloop.api._validation import is_dns1123_label

__all__ = ["path_segment_errors", "validate_hpa", "validate_hpa_status", "validate_hpa_update"]

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
_METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]  # sets.List(): sorted
# The member each metric type must set (validateMetricSpec's switch).
_MEMBER = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
           "ContainerResource": "containerResource"}
_MEMBER_ORDER = ("object", "external", "pods", "resource", "containerResource")  # the order they are checked


def path_segment_errors(name: str) -> list[str]:
    """apimachinery ``path.IsValidPathSegmentName``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def validate_hpa(hpa: Mapping[str, Any]) -> list[FieldError]:
    return _spec_errors(mapping_of(hpa.get("spec")), 1)


def validate_hpa_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    old_min = _int(mapping_of(old.get("spec")).get("minReplicas"))
    return _spec_errors(mapping_of(new.get("spec")), 0 if old_min == 0 else 1)


def validate_hpa_status(new: Mapping[str, Any]) -> list[FieldError]:
    status = mapping_of(new.get("status"))
    errs: list[FieldError] = []
    for name in ("currentReplicas", "desiredReplicas"):
        value = _int(status.get(name)) or 0
        if value < 0:  # ValidateNonnegativeField
            errs.append(FieldError.invalid(f"status.{name}", value, "must be greater than or equal to 0"))
    return errs


def cross_version_reference_errors(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateCrossVersionObjectReference``: kind and name required, each a valid path segment."""
    errs: list[FieldError] = []
    for name in ("kind", "name"):
        value = go_text(ref.get(name))
        if not value:
            errs.append(FieldError.required(f"{path}.{name}", ""))
        else:
            errs.extend(FieldError.invalid(f"{path}.{name}", value, m) for m in path_segment_errors(value))
    return errs


def _spec_errors(spec: Mapping[str, Any], min_bound: int) -> list[FieldError]:
    errs: list[FieldError] = []
    min_replicas = _int(spec.get("minReplicas"))
    max_replicas = _int(spec.get("maxReplicas")) or 0
    if min_replicas is not None and min_replicas < min_bound:
        errs.append(FieldError.invalid("spec.minReplicas", min_replicas,
                                       f"must be greater than or equal to {min_bound}"))
    if max_replicas < 1:
        errs.append(FieldError.invalid("spec.maxReplicas", max_replicas, "must be greater than 0"))
    if min_replicas is not None and max_replicas < min_replicas:
        errs.append(FieldError.invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    errs.extend(cross_version_reference_errors(mapping_of(spec.get("scaleTargetRef")), "spec.scaleTargetRef"))
    errs.extend(_metrics_errors(as_list(spec.get("metrics")), min_replicas))
    behavior = spec.get("behavior")
    if isinstance(behavior, Mapping):
        for name in ("scaleUp", "scaleDown"):
            rules = behavior.get(name)
            if isinstance(rules, Mapping):
                errs.extend(_scaling_rules_errors(rules, f"spec.behavior.{name}"))
    return errs


def _metrics_errors(metrics: list[Any], min_replicas: int | None) -> list[FieldError]:
    errs: list[FieldError] = []
    object_or_external = False
    for i, metric in enumerate(metrics):
        metric = mapping_of(metric)
        errs.extend(_metric_errors(metric, f"spec.metrics[{i}]"))
        object_or_external = object_or_external or metric.get("type") in ("Object", "External")
    if min_replicas == 0 and not object_or_external:
        errs.append(FieldError.forbidden("spec.metrics", "must specify at least one Object or External metric to "
                                                         "support scaling to zero replicas"))
    return errs


def _metric_errors(metric: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateMetricSpec``."""
    errs: list[FieldError] = []
    kind = go_text(metric.get("type"))
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric source type"))
    if kind not in _METRIC_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, _METRIC_TYPES))
    present = [m for m in _MEMBER_ORDER if metric.get(m) is not None]
    if present:  # only the first member set is validated
        first = present[0]
        errs.extend(_SOURCE_RULES[first](mapping_of(metric.get(first)), f"{path}.{first}"))
    expected = _MEMBER.get(kind, "")
    if expected:
        if metric.get(expected) is None:
            errs.append(FieldError.required(f"{path}.{expected}", "must populate information for the given metric source"))
    else:  # the switch's default: a second NotSupported
        errs.append(FieldError.not_supported(f"{path}.type", kind, _METRIC_TYPES))
    if len(present) != 1:
        # sets.String ranged over: Go's map order; the names sorted here (deterministic).
        errs.extend(FieldError.forbidden(f"{path}.{m}", "must populate the given metric source only")
                    for m in sorted(present) if m != expected)
    return errs


def _quantity_sign(value: Any) -> int | None:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return None
    try:
        return parse_quantity(str(value).strip()).sign()
    except QuantityError:
        return None


def _target_errors(target: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateMetricTarget``."""
    errs: list[FieldError] = []
    kind = go_text(target.get("type"))
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(FieldError.invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for name in ("value", "averageValue"):
        value = target.get(name)
        if value is not None and _quantity_sign(value) != 1:
            errs.append(FieldError.invalid(f"{path}.{name}", str(value), "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(FieldError.invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errs


def _identifier_errors(metric: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateMetricIdentifier``."""
    name = go_text(metric.get("name"))
    if not name:
        return [FieldError.required(f"{path}.name", "must specify a metric name")]
    return [FieldError.invalid(f"{path}.name", name, m) for m in path_segment_errors(name)]


def _object_errors(src: Mapping[str, Any], path: str) -> list[FieldError]:
    target = mapping_of(src.get("target"))
    errs = cross_version_reference_errors(mapping_of(src.get("describedObject")), f"{path}.describedObject")
    errs += _identifier_errors(mapping_of(src.get("metric")), f"{path}.metric")
    errs += _target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(FieldError.required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return errs


def _external_errors(src: Mapping[str, Any], path: str) -> list[FieldError]:
    target = mapping_of(src.get("target"))
    errs = _identifier_errors(mapping_of(src.get("metric")), f"{path}.metric")
    errs += _target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(FieldError.required(f"{path}.target.averageValue",
                                        "must set either a target value for metric or a per-pod target"))
    if target.get("value") is not None and target.get("averageValue") is not None:
        errs.append(FieldError.forbidden(f"{path}.target.value",
                                         "may not set both a target value for metric and a per-pod target"))
    return errs


def _pods_errors(src: Mapping[str, Any], path: str) -> list[FieldError]:
    target = mapping_of(src.get("target"))
    errs = _identifier_errors(mapping_of(src.get("metric")), f"{path}.metric")
    errs += _target_errors(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(FieldError.required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return errs


def _utilization_or_value(target: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(FieldError.required(f"{path}.target.averageUtilization",
                                        "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(FieldError.forbidden(f"{path}.target.averageValue",
                                         "may not set both a target raw value and a target utilization"))
    return errs


def _resource_errors(src: Mapping[str, Any], path: str) -> list[FieldError]:
    target = mapping_of(src.get("target"))
    errs: list[FieldError] = []
    if not go_text(src.get("name")):
        errs.append(FieldError.required(f"{path}.name", "must specify a resource name"))
    errs += _target_errors(target, f"{path}.target")
    return errs + _utilization_or_value(target, path)


def _container_resource_errors(src: Mapping[str, Any], path: str) -> list[FieldError]:
    target = mapping_of(src.get("target"))
    errs: list[FieldError] = []
    name = go_text(src.get("name"))
    if not name:
        errs.append(FieldError.required(f"{path}.name", "must specify a resource name"))
    else:
        errs.extend(_resource_name_errors(name, f"{path}.name"))
    container = go_text(src.get("container"))
    if not container:
        errs.append(FieldError.required(f"{path}.container", "must specify a container"))
    else:
        errs.extend(FieldError.invalid(f"{path}.container", container, m) for m in is_dns1123_label(container))
    errs += _target_errors(target, f"{path}.target")
    return errs + _utilization_or_value(target, path)


_SOURCE_RULES = {"object": _object_errors, "external": _external_errors, "pods": _pods_errors,
                 "resource": _resource_errors, "containerResource": _container_resource_errors}


def _scaling_rules_errors(rules: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateScalingRules``."""
    errs: list[FieldError] = []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(FieldError.invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(FieldError.invalid(f"{path}.stabilizationWindowSeconds", window,
                                       f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Disabled", "Max", "Min"):
        errs.append(FieldError.not_supported(f"{path}.selectPolicy", select, ["Disabled", "Max", "Min"]))
    policies = as_list(rules.get("policies"))
    if not policies:
        errs.append(FieldError.required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy = mapping_of(policy)
        at = f"{path}.policies[{i}]"
        kind = go_text(policy.get("type"))
        if kind not in ("Pods", "Percent"):
            errs.append(FieldError.not_supported(f"{at}.type", kind, ["Percent", "Pods"]))
        value = _int(policy.get("value")) or 0
        if value <= 0:
            errs.append(FieldError.invalid(f"{at}.value", value, "must be greater than zero"))
        period = _int(policy.get("periodSeconds")) or 0
        if period <= 0:
            errs.append(FieldError.invalid(f"{at}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(FieldError.invalid(f"{at}.periodSeconds", period,
                                           f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs
