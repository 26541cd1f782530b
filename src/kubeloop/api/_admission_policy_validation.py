"""Validation of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1).

Upstream's ``ValidateValidatingAdmissionPolicy``, ``...Update``, ``...StatusUpdate`` and
``ValidateValidatingAdmissionPolicyBinding`` (k/k ``pkg/apis/admissionregistration/validation/validation.go``,
release-1.32), on the defaulted object, field by field in upstream's order:

- policy ``spec.failurePolicy`` (Required, or NotSupported ``Fail``/``Ignore``), ``spec.paramKind``
  (apiVersion a group/version, kind a DNS-1035 label in any case), ``spec.matchConstraints`` (Required,
  with at least one ``resourceRules`` item: the rules give the expressions their types),
  ``spec.matchConditions`` (at most 64, qualified unique names, expressions that compile; not checked
  again on an update that keeps them and ``paramKind``), ``spec.variables`` (CEL identifiers, expressions
  that compile, each seeing the ones before), ``spec.validations`` / ``spec.auditAnnotations`` (at least
  one of them; expressions, ``messageExpression``, ``message`` on one line, ``reason`` Forbidden, Invalid or
  RequestEntityTooLarge; annotation keys qualified names under the policy's name, unique, at most 20);
- a match block (``matchPolicy`` Equivalent/Exact, both selectors present and valid, every rule:
  operations, apiGroups, apiVersions, resources with their wildcard rules, scope, resourceNames);
- binding ``spec.policyName`` (a DNS subdomain), ``spec.paramRef`` (name xor selector,
  ``parameterNotFoundAction`` Deny/Allow), ``spec.matchResources`` (reported under upstream's misspelt
  path ``spec.matchResouces``), ``spec.validationActions`` (at least one, no duplicate, not Deny with Warn).

ObjectMeta is validated by the write path. Expressions are compiled by :mod:`kubeloop.api._cel_admission`,
imported on the first policy with an expression (the CEL engine is slow to import).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._admission_rules import go_string_slice, rule_errors
from kubeloop.api._errors import FieldError, GoSyntax
from kubeloop.api._match_conditions import match_conditions_errors
from kubeloop.api._validation import (
    is_dns1035_label,
    is_dns1123_subdomain,
    is_qualified_name,
    name_is_dns1123_subdomain,
    path_segment_name_errors,
    validate_label_selector,
)

__all__ = [
    "validate_policy",
    "validate_policy_binding",
    "validate_policy_status",
    "validate_policy_update",
]

_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
_ACTIONS = ["Audit", "Deny", "Warn"]
_MAX_AUDIT_ANNOTATIONS = 20
_MAX_VALUE_EXPRESSION = 5 * 1024
_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if", "import",
    "let", "loop", "package", "namespace", "return", "var", "void", "while",
})


def _go_strings(values: Any, type_name: str = "string") -> GoSyntax:
    """Go's ``%#v`` of a string slice (``[]string{"a", "b"}``), as a field error shows a list value."""
    return go_string_slice(type_name, [str(v) for v in values] if isinstance(values, list) else [])


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# -- rules -------------------------------------------------------------------------------------------


def _named_rule_errors(rule: Any, path: str) -> list[FieldError]:
    rule = _dict(rule)
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(_list(rule.get("resourceNames"))):
        text = str(name)
        errs.extend(FieldError.invalid(f"{path}.resourceNames[{i}]", text, m) for m in path_segment_name_errors(text))
        if text in seen:
            errs.append(FieldError.duplicate(f"{path}.resourceNames[{i}]", text))
        seen.add(text)
    errs.extend(rule_errors(path, rule))
    return errs


def _match_resources_errors(match: Any, path: str) -> list[FieldError]:
    """validateMatchResources (nothing for an absent block)."""
    if match is None:
        return []
    match = _dict(match)
    errs: list[FieldError] = []
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(FieldError.required(f"{path}.matchPolicy"))
    elif policy not in _MATCH_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.matchPolicy", policy, _MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        selector = match.get(key)
        if selector is None:
            errs.append(FieldError.required(f"{path}.{key}"))
        else:
            errs.extend(validate_label_selector(_dict(selector), f"{path}.{key}"))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_list(match.get(key))):
            errs.extend(_named_rule_errors(rule, f"{path}.{key}[{i}]"))
    return errs


# -- expressions ---------------------------------------------------------------------------------------


def _compile_error(source: str, *, has_params: bool, has_authorizer: bool, variables: list[str] | None,
                   returns: tuple[str, ...]) -> str:
    """The compile error of ``source``, or ``""``; ``returns``: the result types its field allows (upstream's
    ``ReturnTypes``; empty for a variable)."""
    from kubeloop.api._cel_admission import compile_policy_expression  # imports the CEL engine: late

    _, error = compile_policy_expression(source, has_params=has_params, has_authorizer=has_authorizer,
                                         variables=variables, returns=returns)
    return error


def _match_conditions_errors(conditions: list[Any], has_params: bool, path: str) -> list[FieldError]:
    return match_conditions_errors(conditions, path, lambda expression: _compile_error(
        expression, has_params=has_params, has_authorizer=True, variables=None, returns=("bool",)))


def _variables_errors(variables: list[Any], has_params: bool, path: str) -> tuple[list[FieldError], list[str]]:
    errs: list[FieldError] = []
    declared: list[str] = []
    for i, variable in enumerate(variables):
        variable = _dict(variable)
        name = str(variable.get("name") or "")
        if not name.strip():
            errs.append(FieldError.required(f"{path}[{i}].name", "name is not specified"))
        elif not _CEL_IDENTIFIER.fullmatch(name) or name in _CEL_RESERVED:
            errs.append(FieldError.invalid(f"{path}[{i}].name", name, "name is not a valid CEL identifier"))
        expression = str(variable.get("expression") or "")
        if not expression.strip():
            errs.append(FieldError.required(f"{path}[{i}].expression", "expression is not specified"))
        elif error := _compile_error(expression, has_params=has_params, has_authorizer=True, variables=list(declared),
                                     returns=()):
            errs.append(FieldError.invalid(f"{path}[{i}].expression", expression, error))
        declared.append(name)
    return errs, declared


def _validation_errors(validation: Any, has_params: bool, variables: list[str] | None, path: str) -> list[FieldError]:
    validation = _dict(validation)
    errs: list[FieldError] = []
    expression = str(validation.get("expression") or "")
    if not expression.strip():
        errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
    elif error := _compile_error(expression, has_params=has_params, has_authorizer=True, variables=variables,
                                 returns=("bool",)):
        errs.append(FieldError.invalid(f"{path}.expression", expression, error))
    message_expression = str(validation.get("messageExpression") or "")
    if message_expression and not message_expression.strip():
        errs.append(FieldError.invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified"))
    elif message_expression.strip() and (error := _compile_error(
            message_expression, has_params=has_params, has_authorizer=False, variables=variables,
            returns=("string",))):
        errs.append(FieldError.invalid(f"{path}.messageExpression", message_expression, error))
    message = str(validation.get("message") or "")
    if message and not message.strip():
        errs.append(FieldError.invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif "\n" in message.strip() or "\r" in message.strip():
        errs.append(FieldError.invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in _REASONS:
        errs.append(FieldError.not_supported(f"{path}.reason", reason, _REASONS))
    return errs


def _audit_annotation_errors(annotation: Any, policy_name: str, has_params: bool, variables: list[str] | None,
                             path: str) -> list[FieldError]:
    annotation = _dict(annotation)
    errs: list[FieldError] = []
    key = str(annotation.get("key") or "")
    if policy_name:
        qualified = f"{policy_name}/{key}"
        errs.extend(FieldError.invalid(f"{path}.key", qualified, m) for m in is_qualified_name(qualified))
    else:
        errs.append(FieldError.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value_expression = str(annotation.get("valueExpression") or "")
    trimmed = value_expression.strip()
    if not trimmed:
        errs.append(FieldError.required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(trimmed.encode()) > _MAX_VALUE_EXPRESSION:
        errs.append(FieldError.required(f"{path}.valueExpression", f"must not exceed {_MAX_VALUE_EXPRESSION} bytes in length"))
    elif error := _compile_error(trimmed, has_params=has_params, has_authorizer=True, variables=variables,
                                 returns=("string", "null_type")):
        errs.append(FieldError.invalid(f"{path}.valueExpression", value_expression, error))
    return errs


def _param_kind_errors(kind: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = str(kind.get("apiVersion") or "")
    if not api_version:
        errs.append(FieldError.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    elif api_version != "/":
        group, _, version = api_version.rpartition("/")
        if group and (messages := is_dns1123_subdomain(group)):
            errs.append(FieldError.invalid(f"{path}.apiVersion", group, ",".join(messages)))
        if not version:
            errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif messages := is_dns1035_label(version):
            errs.append(FieldError.invalid(f"{path}.apiVersion", version, ",".join(messages)))
    else:
        errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
    kind_name = str(kind.get("kind") or "")
    if not kind_name:
        errs.append(FieldError.required(f"{path}.kind"))
    elif messages := is_dns1035_label(kind_name.lower()):
        errs.append(FieldError.invalid(f"{path}.kind", kind_name,
                                       "may have mixed case, but should otherwise match: " + ",".join(messages)))
    return errs


# -- policy ------------------------------------------------------------------------------------------


def _policy_errors(obj: Mapping[str, Any], *, check_match_conditions: bool) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    name = str(_dict(obj.get("metadata")).get("name") or "")
    errs: list[FieldError] = []
    failure_policy = spec.get("failurePolicy")
    if failure_policy is None:
        errs.append(FieldError.required("spec.failurePolicy"))
    elif failure_policy not in _FAILURE_POLICIES:
        errs.append(FieldError.not_supported("spec.failurePolicy", failure_policy, _FAILURE_POLICIES))
    param_kind = spec.get("paramKind")
    has_params = param_kind is not None
    if has_params:
        errs.extend(_param_kind_errors(_dict(param_kind), "spec.paramKind"))
    constraints = spec.get("matchConstraints")
    if constraints is None:
        errs.append(FieldError.required("spec.matchConstraints"))
    else:
        errs.extend(_match_resources_errors(constraints, "spec.matchConstraints"))
        if not _list(_dict(constraints).get("resourceRules")):
            errs.append(FieldError.required("spec.matchConstraints.resourceRules"))
    if check_match_conditions:
        errs.extend(_match_conditions_errors(_list(spec.get("matchConditions")), has_params, "spec.matchConditions"))
    variables: list[str] | None = None
    if _list(spec.get("variables")):
        variable_errors, variables = _variables_errors(_list(spec.get("variables")), has_params, "spec.variables")
        errs.extend(variable_errors)
    validations = _list(spec.get("validations"))
    annotations = _list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        errs.append(FieldError.required("spec.validations", detail))
        errs.append(FieldError.required("spec.auditAnnotations", detail))
        return errs
    for i, validation in enumerate(validations):
        errs.extend(_validation_errors(validation, has_params, variables, f"spec.validations[{i}]"))
    if len(annotations) > _MAX_AUDIT_ANNOTATIONS:
        errs.append(FieldError.invalid("spec.auditAnnotations", GoSyntax(f"[{len(annotations)} auditAnnotations]"),
                                       f"must not have more than {_MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
    keys: set[str] = set()
    for i, annotation in enumerate(annotations):
        errs.extend(_audit_annotation_errors(annotation, name, has_params, variables, f"spec.auditAnnotations[{i}]"))
        key = str(_dict(annotation).get("key") or "")
        if key in keys:
            errs.append(FieldError.duplicate(f"spec.auditAnnotations[{i}].key", key))
        keys.add(key)
    return errs


def validate_policy(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicy (the spec; ObjectMeta is the write path's)."""
    return _policy_errors(obj, check_match_conditions=True)


def validate_policy_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyUpdate: matchConditions are checked again only when they or
    ``paramKind`` changed (ignoreValidatingAdmissionPolicyMatchConditions)."""
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    unchanged = (new_spec.get("paramKind") == old_spec.get("paramKind")
                 and new_spec.get("matchConditions") == old_spec.get("matchConditions"))
    return _policy_errors(new, check_match_conditions=not unchanged)


def validate_policy_status(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyStatusUpdate: each typeChecking warning has a warning and a fieldRef."""
    status = _dict(obj.get("status"))
    errs: list[FieldError] = []
    warnings = _list(_dict(status.get("typeChecking")).get("expressionWarnings"))
    for i, warning in enumerate(warnings):
        warning = _dict(warning)
        path = f"status.typeChecking.expressionWarnings[{i}]"
        if not warning.get("warning"):
            errs.append(FieldError.required(f"{path}.warning"))
        if not str(warning.get("fieldRef") or "").strip():
            errs.append(FieldError.required(f"{path}.fieldRef"))
    return errs


# -- binding -----------------------------------------------------------------------------------------


def _param_ref_errors(ref: Any, path: str) -> list[FieldError]:
    if ref is None:
        return []
    ref = _dict(ref)
    errs: list[FieldError] = []
    name = str(ref.get("name") or "")
    selector = ref.get("selector")
    exclusive = "name and selector are mutually exclusive"
    if name:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in path_segment_name_errors(name))
        if selector is not None:
            errs.append(FieldError.forbidden(f"{path}.name", exclusive))
    if selector is not None:
        errs.extend(validate_label_selector(_dict(selector), f"{path}.selector"))
        if name:
            errs.append(FieldError.forbidden(f"{path}.selector", exclusive))
    if not name and selector is None:
        errs.append(FieldError.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(FieldError.required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(FieldError.not_supported(f"{path}.parameterNotFoundAction", action, ["Deny", "Allow"]))
    return errs


def _actions_errors(actions: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, action in enumerate(actions):
        if action not in _ACTIONS:
            errs.append(FieldError.not_supported(f"{path}[{i}]", action, _ACTIONS))
        if action in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        errs.append(FieldError.invalid(path, _go_strings(actions, "admissionregistration.ValidationAction"),
                                       "must not contain both Deny and Warn (repeating the same validation failure "
                                       "information in the API response and headers serves no purpose)"))
    if not seen:
        errs.append(FieldError.required(path, "at least one validation action is required"))
    return errs


def validate_policy_binding(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyBinding (create and update alike; the spec)."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    policy_name = str(spec.get("policyName") or "")
    if not policy_name:
        errs.append(FieldError.required("spec.policyName"))
    else:
        errs.extend(FieldError.invalid("spec.policyName", policy_name, m)
                    for m in name_is_dns1123_subdomain(policy_name, False))
    errs.extend(_param_ref_errors(spec.get("paramRef"), "spec.paramRef"))
    # Upstream reports the binding's match block under this misspelt path.
    errs.extend(_match_resources_errors(spec.get("matchResources"), "spec.matchResouces"))
    errs.extend(_actions_errors(_list(spec.get("validationActions")), "spec.validationActions"))
    return errs
