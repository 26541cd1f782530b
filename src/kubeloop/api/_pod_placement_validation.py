"""Validation of where a pod may run besides affinity: topology spread constraints, tolerations and
scheduling gates, as upstream's ``ValidatePodSpec`` checks them (k/k
``pkg/apis/core/validation/validation.go``: ``validateTopologySpreadConstraints``,
``validateMatchLabelKeysInTopologySpread``, ``ValidateTolerations``, ``validateSchedulingGates``).

Each returns one :class:`FieldError` per problem with upstream's path, type and text; input that is not
the expected JSON shape is skipped, never a crash. :mod:`kubeloop.api._pod_scheduling_validation` calls
them in ``ValidatePodSpec``'s order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, label_name_errors, label_selector_errors, mapping_of, objects_of
from kubeloop.api._validation import is_qualified_name, is_valid_label_value

__all__ = ["scheduling_gate_errors", "toleration_errors", "topology_spread_errors", "validate_tolerations"]

_WHEN_UNSATISFIABLE = ["DoNotSchedule", "ScheduleAnyway"]  # sets.List(supportedScheduleActions)
_NODE_INCLUSION_POLICIES = ["Honor", "Ignore"]  # sets.List(supportedPodTopologySpreadNodePolicies)
_TOLERATION_OPERATORS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]  # validateTaintEffect's validValues
_NOT_POSITIVE = "must be greater than zero"  # isNotPositiveErrorMsg


def _positive(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return []
    return [FieldError.invalid(path, value, _NOT_POSITIVE)]


def topology_spread_errors(constraints: list[Any], path: str, *, check_selectors: bool) -> list[FieldError]:
    """validateTopologySpreadConstraints (1.32: matchLabelKeys checked against the selector as given)."""
    errs: list[FieldError] = []
    items = objects_of(constraints)
    for n, (i, constraint) in enumerate(items):
        p = f"{path}[{i}]"
        errs.extend(_positive(constraint.get("maxSkew", 0), f"{p}.maxSkew"))
        topology_key = go_text(constraint.get("topologyKey"))
        if not topology_key:
            errs.append(FieldError.required(f"{p}.topologyKey", "can not be empty"))
        action = go_text(constraint.get("whenUnsatisfiable"))
        if action not in _WHEN_UNSATISFIABLE:
            errs.append(FieldError.not_supported(f"{p}.whenUnsatisfiable", action, _WHEN_UNSATISFIABLE))
        # ValidateSpreadConstraintNotRepeat: {topologyKey, whenUnsatisfiable} once, reported at the first.
        if any(go_text(c.get("topologyKey")) == topology_key and go_text(c.get("whenUnsatisfiable")) == action
               for _, c in items[n + 1:]):
            errs.append(FieldError.duplicate(f"{p}.{{topologyKey, whenUnsatisfiable}}", f"{{{topology_key}, {action}}}"))
        min_domains = constraint.get("minDomains")
        if min_domains is not None:
            errs.extend(_positive(min_domains, f"{p}.minDomains"))
            if action != "DoNotSchedule":
                errs.append(FieldError.invalid(f"{p}.minDomains", min_domains,
                                               f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))
        for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(name)
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                errs.append(FieldError.not_supported(f"{p}.{name}", policy, _NODE_INCLUSION_POLICIES))
        errs.extend(_spread_match_label_keys(constraint, f"{p}.matchLabelKeys"))
        if check_selectors:
            errs.extend(label_selector_errors(constraint.get("labelSelector"), f"{p}.labelSelector", allow_invalid_values=False))
    return errs


def _spread_match_label_keys(constraint: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateMatchLabelKeysInTopologySpread."""
    keys = constraint.get("matchLabelKeys")
    if not isinstance(keys, list) or not keys:
        return []
    errs: list[FieldError] = []
    selector = constraint.get("labelSelector")
    selector_keys: set[str] = set()
    if isinstance(selector, Mapping):
        selector_keys.update(mapping_of(selector.get("matchLabels")))
        selector_keys.update(go_text(e.get("key")) for _, e in objects_of(selector.get("matchExpressions")))
    else:
        errs.append(FieldError.forbidden(path, "must not be specified when labelSelector is not set"))
    for i, key in enumerate(keys):
        errs.extend(label_name_errors(go_text(key), f"{path}[{i}]"))
        if go_text(key) in selector_keys:
            errs.append(FieldError.invalid(f"{path}[{i}]", key, "exists in both matchLabelKeys and labelSelector"))
    return errs


def toleration_errors(tolerations: list[Any], path: str) -> list[FieldError]:
    """ValidateTolerations."""
    errs: list[FieldError] = []
    for i, toleration in objects_of(tolerations):
        p = f"{path}[{i}]"
        key, operator = go_text(toleration.get("key")), go_text(toleration.get("operator"))
        value, effect = go_text(toleration.get("value")), go_text(toleration.get("effect"))
        if key:
            errs.extend(label_name_errors(key, f"{p}.key"))
        # An empty key with operator Exists (and no value) tolerates every taint; any other operator
        # needs a key.
        if not key and operator != "Exists":
            errs.append(FieldError.invalid(f"{p}.operator", operator,
                                           'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(FieldError.invalid(f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):  # an empty operator means Equal
            if messages := is_valid_label_value(value):
                errs.append(FieldError.invalid(f"{p}.operator", value, ";".join(messages)))
        elif operator == "Exists":
            if value:
                errs.append(FieldError.invalid(f"{p}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(FieldError.not_supported(f"{p}.operator", operator, _TOLERATION_OPERATORS))
        # An empty effect tolerates every effect.
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(FieldError.not_supported(f"{p}.effect", effect, _TAINT_EFFECTS))
    return errs


def scheduling_gate_errors(gates: Any, path: str) -> list[FieldError]:
    """validateSchedulingGates: each name a qualified name, and no name twice."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in objects_of(gates):
        name = go_text(gate.get("name"))
        errs.extend(FieldError.invalid(f"{path}[{i}]", name, m) for m in is_qualified_name(name))
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return errs


def validate_tolerations(tolerations: Any, field: str) -> list[FieldError]:
    """``ValidateTolerations`` on the list at ``field``."""
    return toleration_errors(tolerations, field) if isinstance(tolerations, list) else []
