"""Validation of admission rules, shared by webhook configurations and admission policies.

Upstream: k/k ``pkg/apis/admissionregistration/validation/validation.go`` (1.32) ``validateRuleWithOperations``,
``validateRule`` and ``validateResources`` (subresources allowed), used by both kinds' validation: each of
operations, apiGroups, apiVersions and resources required, ``*`` alone in its list, a known operation and
scope, and resources whose wildcards (``*``, ``*/*``, ``x/*``, ``*/x``) do not overlap what they cover. A
list value prints as Go's ``%#v`` of the slice (``[]string{"a", "b"}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError, GoSyntax

__all__ = ["OPERATIONS", "SCOPES", "go_string_slice", "rule_errors"]

OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
SCOPES = ["*", "Cluster", "Namespaced"]


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def go_string_slice(type_name: str, values: list[str]) -> GoSyntax:
    quoted = ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return GoSyntax(f"[]{type_name}{{{quoted}}}")


def _resources(path: str, resources: list[str]) -> list[FieldError]:
    """validateResources: ``x/*``, ``*/x``, ``*/*`` and ``*`` may not overlap what they already cover."""
    errors: list[FieldError] = []
    if not resources:
        errors.append(FieldError.required(path))
    wildcard_sub: set[str] = set()
    wildcard_res: set[str] = set()
    double = single = plain = False
    for i, entry in enumerate(resources):
        if entry == "":
            errors.append(FieldError.required(f"{path}[{i}]"))
            continue
        double = double or entry == "*/*"
        single = single or entry == "*"
        res, slash, sub = entry.partition("/")
        if not slash:
            plain = entry != "*"
            continue
        if res in wildcard_sub:
            errors.append(FieldError.invalid(f"{path}[{i}]", entry, f"if '{res}/*' is present, must not specify {entry}"))
        if sub in wildcard_res:
            errors.append(FieldError.invalid(f"{path}[{i}]", entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errors.append(FieldError.invalid(path, go_string_slice("string", resources),
                                         "if '*/*' is present, must not specify other resources"))
    if single and plain:
        errors.append(FieldError.invalid(path, go_string_slice("string", resources),
                                         "if '*' is present, must not specify other resources without subresources"))
    return errors


def _star_list(errors: list[FieldError], path: str, values: list[str], go_type: str, what: str) -> None:
    """A rule's list: required, and ``*`` only alone (validateRule's checks on each of its lists)."""
    if not values:
        errors.append(FieldError.required(path))
    if len(values) > 1 and "*" in values:
        errors.append(FieldError.invalid(path, go_string_slice(go_type, values),
                                         f"if '*' is present, must not specify other {what}"))


def rule_errors(path: str, rule: Mapping[str, Any]) -> list[FieldError]:
    """validateRuleWithOperations and validateRule (subresources allowed)."""
    errors: list[FieldError] = []
    operations = _strings(rule.get("operations"))
    _star_list(errors, f"{path}.operations", operations, "admissionregistration.OperationType", "operations")
    for i, operation in enumerate(operations):
        if operation not in OPERATIONS:
            errors.append(FieldError.not_supported(f"{path}.operations[{i}]", operation, OPERATIONS))
    _star_list(errors, f"{path}.apiGroups", _strings(rule.get("apiGroups")), "string", "API groups")
    versions = _strings(rule.get("apiVersions"))
    _star_list(errors, f"{path}.apiVersions", versions, "string", "API versions")
    errors.extend(FieldError.required(f"{path}.apiVersions[{i}]") for i, v in enumerate(versions) if v == "")
    errors.extend(_resources(f"{path}.resources", _strings(rule.get("resources"))))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errors.append(FieldError.not_supported(f"{path}.scope", scope, SCOPES))
    return errors
