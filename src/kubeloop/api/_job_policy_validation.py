"""A Job's ``spec.podFailurePolicy`` and ``spec.managedBy``, as k/k ``pkg/apis/batch/validation/validation.go``
(release 1.32) checks them inside ``validateJobSpec``.

- :func:`pod_failure_policy_errors` (``validatePodFailurePolicy`` and its rule checks): at most 20 rules;
  an action among Count, FailIndex (only with ``backoffLimitPerIndex``), FailJob and Ignore; exactly one
  of ``onExitCodes`` (operator In or NotIn, a container or init container of the template, 1 to 255
  values, ordered, none repeated, no 0 for In) and ``onPodConditions`` (at most 20, a qualified
  condition type, status True, False or Unknown).
- :func:`managed_by_errors`: ``IsDomainPrefixedPath`` and at most 63 characters.

Messages print Go values as ``field.Error`` does (``%q`` of a ``[]string`` in "valid values",
``%#v`` of a ``[]int32``). Pure functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, mapping_of
from kubeloop.api._validation import is_domain_prefixed_path, is_qualified_name

__all__ = ["managed_by_errors", "pod_failure_policy_errors"]

_MAX_MANAGED_BY = 63


def managed_by_errors(value: Any) -> list[FieldError]:
    """``IsDomainPrefixedPath`` and the 63-character limit on ``spec.managedBy``."""
    path = "spec.managedBy"
    if not isinstance(value, str):
        return []
    errs = is_domain_prefixed_path(path, value)
    if value and len(value) > _MAX_MANAGED_BY:
        errs.append(FieldError("too_long", path, f"may not be more than {_MAX_MANAGED_BY} bytes", value))
    return errs


_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]  # sets.List: sorted
_OPERATORS = ["In", "NotIn"]
_CONDITION_STATUSES = ["False", "True", "Unknown"]


def _go_quoted_list(values: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def _go_int32s(values: Any) -> str:
    """``%#v`` of a ``[]int32``."""
    if not isinstance(values, list):
        return "[]int32(nil)"
    return "[]int32{" + ", ".join(str(v) for v in values) + "}"


def _too_many(path: str, count: int, limit: int) -> FieldError:
    return FieldError("too_many", path, f"{count}: must have at most {limit} items")


def _on_exit_codes_errors(req: Mapping[str, Any], path: str, containers: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = go_text(req.get("operator"))
    if not operator:
        errs.append(FieldError.required(f"{path}.operator", f"valid values: {_go_quoted_list(_OPERATORS)}"))
    elif operator not in _OPERATORS:
        errs.append(FieldError.not_supported(f"{path}.operator", operator, _OPERATORS))
    name = req.get("containerName")
    if isinstance(name, str) and name not in containers:
        errs.append(FieldError.invalid(f"{path}.containerName", name,
                                       "must be one of the container or initContainer names in the pod template"))
    raw = req.get("values")
    values = [v for v in raw if isinstance(v, int)] if isinstance(raw, list) else []
    if not values:
        errs.append(FieldError("invalid", f"{path}.values", f"{_go_int32s(raw)}: at least one value is required"))
    elif len(values) > 255:
        errs.append(_too_many(f"{path}.values", len(values), 255))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            errs.append(FieldError.invalid(f"{path}.values[{j}]", value, "must not be 0 for the In operator"))
        if value in seen:
            errs.append(FieldError.duplicate(f"{path}.values[{j}]", value))
        seen.add(value)
    if any(a > b for a, b in itertools.pairwise(values)):
        errs.append(FieldError("invalid", f"{path}.values", f"{_go_int32s(values)}: must be ordered"))
    return errs


def _on_pod_conditions_errors(patterns: list[Any], path: str) -> list[FieldError]:
    errs = [_too_many(path, len(patterns), 20)] if len(patterns) > 20 else []
    for j, pattern in enumerate(patterns):
        pattern = mapping_of(pattern)
        kind = go_text(pattern.get("type"))
        errs += [FieldError.invalid(f"{path}[{j}].type", kind, m) for m in is_qualified_name(kind)]
        status = go_text(pattern.get("status"))
        if not status:
            errs.append(FieldError.required(f"{path}[{j}].status", f"valid values: {_go_quoted_list(_CONDITION_STATUSES)}"))
        elif status not in _CONDITION_STATUSES:
            errs.append(FieldError.not_supported(f"{path}[{j}].status", status, _CONDITION_STATUSES))
    return errs


def pod_failure_policy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """``validatePodFailurePolicy``: at most 20 rules, each with a known action and exactly one of
    ``onExitCodes`` (operator, known container, ordered non-repeated values, no 0 for In) and
    ``onPodConditions`` (qualified type, status True, False or Unknown)."""
    rules = mapping_of(spec.get("podFailurePolicy")).get("rules")
    rules = rules if isinstance(rules, list) else []
    path = "spec.podFailurePolicy.rules"
    errs = [_too_many(path, len(rules), 20)] if len(rules) > 20 else []
    pod_spec = mapping_of(mapping_of(spec.get("template")).get("spec"))
    containers = {go_text(mapping_of(c).get("name")) for key in ("containers", "initContainers")
                  for c in pod_spec.get(key) or ()}
    for i, rule in enumerate(rules):
        rule = mapping_of(rule)
        rule_path = f"{path}[{i}]"
        action = go_text(rule.get("action"))
        if not action:
            errs.append(FieldError.required(f"{rule_path}.action", f"valid values: {_go_quoted_list(_ACTIONS)}"))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(FieldError.invalid(f"{rule_path}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _ACTIONS:
            errs.append(FieldError.not_supported(f"{rule_path}.action", action, _ACTIONS))
        on_exit = rule.get("onExitCodes")
        patterns = rule.get("onPodConditions")
        patterns = patterns if isinstance(patterns, list) else []
        if on_exit is not None:
            errs += _on_exit_codes_errors(mapping_of(on_exit), f"{rule_path}.onExitCodes", containers)
        if patterns:
            errs += _on_pod_conditions_errors(patterns, f"{rule_path}.onPodConditions")
        if on_exit is not None and patterns:
            errs.append(FieldError("invalid", rule_path, "specifying both OnExitCodes and OnPodConditions is not supported"))
        if on_exit is None and not patterns:
            errs.append(FieldError("invalid", rule_path, "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs
