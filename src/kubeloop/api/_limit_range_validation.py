"""Validation and defaults of LimitRange (core/v1), as upstream's ``ValidateLimitRange`` and defaulting do.

k/k ``pkg/apis/core/validation/validation.go`` ``ValidateLimitRange``: each item's ``type`` is a
qualified name and, without a domain, one of ``Pod``, ``Container``, ``PersistentVolumeClaim``, at
most once per type; every named resource is valid for the type (``validateLimitRangeResourceName``:
container resources for Pod and Container, any standard or qualified resource otherwise); a Pod item
has no ``default``/``defaultRequest``; a PersistentVolumeClaim item has a min or max ``storage``; per
resource, min <= defaultRequest <= default <= max and min <= max, ``maxLimitRequestRatio`` at least 1
and at most max/min, and for a resource that may not be overcommitted (hugepages, extended ones)
default equal to defaultRequest. Resources are checked in name order.

:func:`default_limit_range` is ``SetDefaults_LimitRangeItem`` (``pkg/apis/core/v1/defaults.go``): for a
Container item, a missing default limit is the max, a missing default request is the default limit,
else the min.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import mapping_of, objects_of
from kubeloop.api._pod_resources_validation import (
    _compare,
    _is_native,
    _milli_value,
    _quantity,
    _resource_name_errors,
    _whole_value,
)
from kubeloop.api._quantity import Quantity
from kubeloop.api._resource_quota_validation import resource_name_errors
from kubeloop.api._validation import is_qualified_name

__all__ = ["LIMIT_TYPES", "default_limit_range", "validate_limit_range"]

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_MAX_MILLI = 2**63 // 1000  # resource.MaxMilliValue


def default_limit_range(obj: dict[str, Any]) -> None:
    """SetDefaults_LimitRangeItem, in place (an empty map stays out: Go's ``omitempty``)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("limits"), list):
        return
    for item in spec["limits"]:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(mapping_of(item.get("default")))
        request = dict(mapping_of(item.get("defaultRequest")))
        for name, value in mapping_of(item.get("max")).items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in mapping_of(item.get("min")).items():
            request.setdefault(name, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def _type_errors(value: str, path: str) -> list[FieldError]:
    """validateLimitRangeTypeName."""
    if messages := is_qualified_name(value):
        return [FieldError.invalid(path, value, m) for m in messages]
    if "/" not in value and value not in LIMIT_TYPES:
        return [FieldError.invalid(path, value, "must be a standard limit type or fully qualified")]
    return []


def _name_errors(limit_type: str, name: str, path: str) -> list[FieldError]:
    """validateLimitRangeResourceName."""
    if limit_type in ("Pod", "Container"):
        return _resource_name_errors(name, path)
    return resource_name_errors(name, path)


_value = _whole_value  # Quantity.Value()


def _bounds_errors(name: str, path: str, found: Mapping[str, Quantity]) -> list[FieldError]:
    """The per-resource ordering rules of one item."""
    errs: list[FieldError] = []
    low, high = found.get("min"), found.get("max")
    default, request, ratio = found.get("default"), found.get("defaultRequest"), found.get("maxLimitRequestRatio")

    def invalid(key: str, value: Quantity, detail: str) -> None:
        errs.append(FieldError.invalid(f"{path}.{key}[{name}]", value.text, detail))

    if low is not None and high is not None and _compare(low, high) > 0:
        invalid("min", low, f"min value {low.text} is greater than max value {high.text}")
    if request is not None and low is not None and _compare(low, request) > 0:
        invalid("defaultRequest", request, f"min value {low.text} is greater than default request value {request.text}")
    if request is not None and high is not None and _compare(request, high) > 0:
        invalid("defaultRequest", request, f"default request value {request.text} is greater than max value {high.text}")
    if request is not None and default is not None and _compare(request, default) > 0:
        invalid("defaultRequest", request,
                f"default request value {request.text} is greater than default limit value {default.text}")
    if default is not None and low is not None and _compare(low, default) > 0:
        invalid("default", low, f"min value {low.text} is greater than default value {default.text}")
    if default is not None and high is not None and _compare(default, high) > 0:
        invalid("default", high, f"default value {default.text} is greater than max value {high.text}")
    if ratio is not None and _milli_value(ratio) < 1000:
        invalid("maxLimitRequestRatio", ratio, f"ratio {ratio.text} is less than 1")
    if ratio is not None and low is not None and high is not None:
        ratio_value, low_value, high_value = float(_value(ratio)), _value(low), _value(high)
        if _value(ratio) < _MAX_MILLI and low_value < _MAX_MILLI and high_value < _MAX_MILLI:
            ratio_value, low_value, high_value = _milli_value(ratio) / 1000, _milli_value(low), _milli_value(high)
        limit = high_value / low_value if low_value else float("inf")
        if ratio_value > limit:
            shown = f"{limit:f}" if limit != float("inf") else "+Inf"
            invalid("maxLimitRequestRatio", ratio, f"ratio {ratio.text} is greater than max/min = {shown}")
    overcommit = _is_native(name) and not name.startswith("hugepages-")  # helper.IsOvercommitAllowed
    if not overcommit and default is not None and request is not None and _compare(default, request) != 0:
        invalid("defaultRequest", request,
                f"default value {default.text} must equal to defaultRequest value {request.text} in {name}")
    return errs


def _collect(item: Mapping[str, Any], key: str, limit_type: str, path: str,
             found: dict[str, dict[str, Quantity]]) -> list[FieldError]:
    """The name errors of one resource list of an item; its quantities go into ``found[name][key]``."""
    errs: list[FieldError] = []
    listed = mapping_of(item.get(key))
    for name in sorted(listed):
        errs.extend(_name_errors(limit_type, name, f"{path}.{key}[{name}]"))
        quantity = _quantity(listed[name])
        if quantity is not None:
            found.setdefault(name, {})[key] = quantity
    return errs


def validate_limit_range(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateLimitRange, but metadata (the generic write path checks it)."""
    errs: list[FieldError] = []
    seen_types: set[str] = set()
    for i, item in objects_of(mapping_of(obj.get("spec")).get("limits")):
        path = f"spec.limits[{i}]"
        limit_type = str(item.get("type") or "")
        errs.extend(_type_errors(limit_type, f"{path}.type"))
        if limit_type in seen_types:
            errs.append(FieldError.duplicate(f"{path}.type", limit_type))
        seen_types.add(limit_type)
        found: dict[str, dict[str, Quantity]] = {}
        errs.extend(_collect(item, "max", limit_type, path, found))
        errs.extend(_collect(item, "min", limit_type, path, found))
        if limit_type == "Pod":
            errs.extend(FieldError.forbidden(f"{path}.{key}", "may not be specified when `type` is 'Pod'")
                        for key in ("default", "defaultRequest") if mapping_of(item.get(key)))
        else:
            errs.extend(_collect(item, "default", limit_type, path, found))
            errs.extend(_collect(item, "defaultRequest", limit_type, path, found))
        if limit_type == "PersistentVolumeClaim" and not (
                "storage" in mapping_of(item.get("min")) or "storage" in mapping_of(item.get("max"))):
            errs.append(FieldError.required(f"{path}.limits", "either minimum or maximum storage value is required, "
                                                              "but neither was provided"))
        errs.extend(_collect(item, "maxLimitRequestRatio", limit_type, path, found))
        for name in sorted(found):
            errs.extend(_bounds_errors(name, path, found[name]))
    return errs

