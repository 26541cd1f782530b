"""Checking a CRD schema's ``x-kubernetes-validations`` when the CRD is written (pure functions).

Upstream's ``validateOpenAPISchema`` / ``ValidateCustomResourceDefinitionOpenAPISchema``
(k8s.io/apiextensions-apiserver ``pkg/apis/apiextensions/validation/validation.go``), rule by rule at
``<schema path>.x-kubernetes-validations[i]``:

- ``.rule``: ``Required value: rule is not specified``; ``Invalid value: apiextensions.ValidationRule{...}:
  compilation failed: ERROR: <input>:1:9: ...`` (the value is the whole rule as Go's ``%#v`` prints
  it); a transition rule under items of a list that is not ``x-kubernetes-list-type: map``:
  ``oldSelf cannot be used on the uncorrelatable portion of the schema within <path>``;
- ``.message``: non-empty when set, at most 2048 characters, one line; required when the rule spans
  lines; ``.messageExpression``: non-empty when set, and it must compile;
- ``.reason``: one of FieldValueDuplicate, FieldValueForbidden, FieldValueInvalid, FieldValueRequired;
- ``.fieldPath``: non-empty, one line, and a path of declared fields or map keys below the node;
- ``.optionalOldSelf``: only on a rule that reads ``oldSelf``.

- ``.rule`` again: ``Forbidden: estimated rule cost exceeds budget by factor of more than 100x ...`` for
  a rule whose cost, times the times it can run, is far past the limit (:mod:`kubeloop.api._cel_cost`:
  a lower bound, so only the "more than 100x" cases are reported).

Schema errors (the first group) stop the compilation of the rules at that node and above it, and a
node's rules are checked after those below it, as upstream's recursion orders them.
Not modelled: the smaller excesses (``by factor of 3.1x``) and the per-CRD total cost limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._cel_compile import compile_rule
from kubeloop.api._cel_cost import cost_error, node_cardinality, unbounded_cardinality
from kubeloop.api._cel_validate import field_path_segments
from kubeloop.api._errors import FieldError, GoSyntax

__all__ = ["validate_schema_rules"]

Schema = Mapping[str, Any]
_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


def validate_schema_rules(schema: Any, path: str) -> list[FieldError]:
    """Every reason the rules in ``schema`` (an ``openAPIV3Schema`` at ``path``) cannot be stored."""
    errors: list[FieldError] = []
    if isinstance(schema, Mapping):
        _walk(schema, path, errors, root=True, uncorrelatable=None, cardinality=1)
    return errors


def _walk(schema: Schema, path: str, errors: list[FieldError], *, root: bool, uncorrelatable: str | None,
          cardinality: int | None) -> bool:
    """Check the rules below ``schema``, then its own, as upstream orders them; whether a schema error (a
    rule's message, reason or fieldPath) was found here or below, which stops the compilation here.
    ``cardinality``: how many times a rule here can run, None past an unbounded list or map."""
    blocked = False
    for i, sub in enumerate(schema.get("allOf") or ()):
        if isinstance(sub, Mapping):
            blocked |= _walk(sub, f"{path}.allOf[{i}]", errors, root=root, uncorrelatable=uncorrelatable,
                             cardinality=cardinality)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                blocked |= _walk(sub, f"{path}.properties[{name}]", errors, root=False,
                                 uncorrelatable=uncorrelatable, cardinality=cardinality)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        blocked |= _walk(extra, f"{path}.additionalProperties", errors, root=False, uncorrelatable=uncorrelatable,
                         cardinality=node_cardinality(cardinality, schema, extra))
    items = schema.get("items")
    if isinstance(items, Mapping):
        items_path = f"{path}.items"
        below = uncorrelatable
        if below is None and schema.get("x-kubernetes-list-type") != "map":
            below = path  # withForbidOldSelfValidations(fldPath): the list's own path
        blocked |= _walk(items, items_path, errors, root=False, uncorrelatable=below,
                         cardinality=node_cardinality(cardinality, schema, items))
    rules = schema.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        runs = cardinality if cardinality is not None else unbounded_cardinality(schema)
        blocked |= _check_rules(schema, rules, path, errors, root=root, uncorrelatable=uncorrelatable,
                                cardinality=runs, blocked=blocked)
    return blocked


def _go_string(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)


def rule_syntax(rule: Mapping[str, Any]) -> GoSyntax:
    """The rule as Go's ``%#v`` prints an ``apiextensions.ValidationRule`` (pointers as an address)."""
    reason = rule.get("reason")
    optional = rule.get("optionalOldSelf")
    return GoSyntax(
        "apiextensions.ValidationRule{"
        f"Rule:{_go_string(rule.get('rule') or '')}, Message:{_go_string(rule.get('message') or '')}, "
        f"MessageExpression:{_go_string(rule.get('messageExpression') or '')}, "
        f"Reason:(*apiextensions.FieldValueErrorReason)({'0xc000a1b2c0' if reason is not None else 'nil'}), "
        f"FieldPath:{_go_string(rule.get('fieldPath') or '')}, "
        f"OptionalOldSelf:(*bool)({'0xc000a1b2c8' if optional is not None else 'nil'})}}"
    )


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


def _valid_field_path(schema: Schema, text: str) -> bool:
    segments = field_path_segments(text)
    if segments is None:
        return False
    node: Any = schema
    for name in segments:
        if not isinstance(node, Mapping):
            return False
        props = node.get("properties")
        if isinstance(props, Mapping) and props:
            node = props.get(name)
            if node is None:
                return False
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return False
    return True


def _schema_errors(schema: Schema, rule: Mapping[str, Any], at: str) -> list[FieldError]:
    errors: list[FieldError] = []
    source = str(rule.get("rule") or "")
    message = rule.get("message")
    trimmed = str(message or "").strip()
    if not source.strip():
        errors.append(FieldError.required(f"{at}.rule", "rule is not specified"))
    elif message and not trimmed:
        errors.append(FieldError.invalid(f"{at}.message", message, "message must be non-empty if specified"))
    elif message and len(str(message)) > 2048:
        errors.append(FieldError.invalid(f"{at}.message", str(message)[:10] + "...",
                                         "message must have a maximum length of 2048 characters"))
    elif _has_newlines(trimmed):
        errors.append(FieldError.invalid(f"{at}.message", message, "message must not contain line breaks"))
    elif _has_newlines(source.strip()) and not trimmed:
        errors.append(FieldError.required(f"{at}.message", "message must be specified if rule contains line breaks"))
    expression = rule.get("messageExpression")
    if expression and not str(expression).strip():
        errors.append(FieldError.required(f"{at}.messageExpression", "messageExpression must be non-empty if specified"))
    reason = rule.get("reason")
    if reason is not None and reason not in _REASONS:
        errors.append(FieldError.not_supported(f"{at}.reason", reason, _REASONS))
    field_path = rule.get("fieldPath")
    if field_path:
        text = str(field_path)
        if not text.strip():
            errors.append(FieldError.invalid(f"{at}.fieldPath", text, "fieldPath must be non-empty if specified"))
        if _has_newlines(text):
            errors.append(FieldError.invalid(f"{at}.fieldPath", text, "fieldPath must not contain line breaks"))
        if not _valid_field_path(schema, text.strip()):
            errors.append(FieldError.invalid(f"{at}.fieldPath", text, "fieldPath must be a valid path"))
    return errors


def _check_rules(schema: Schema, rules: list[Any], path: str, errors: list[FieldError], *, root: bool,
                 uncorrelatable: str | None, cardinality: int, blocked: bool) -> bool:
    """The rules' own checks, then (with no schema error here or below) their compilation; whether a
    schema error was found here."""
    base = f"{path}.x-kubernetes-validations"
    found: list[FieldError] = []
    for i, rule in enumerate(rules):
        if isinstance(rule, Mapping):
            found.extend(_schema_errors(schema, rule, f"{base}[{i}]"))
    errors.extend(found)
    if found or blocked:
        return bool(found)  # upstream compiles only once the schema errors at this level or below are gone
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        at = f"{base}[{i}]"
        compiled, rule_error, message_error = compile_rule(rule, schema, root=root)
        if compiled is not None and (too_costly := cost_error(str(rule.get("rule")), schema, cardinality)):
            errors.append(FieldError.forbidden(f"{at}.rule", too_costly))
        if rule_error is not None:
            if rule_error.kind == "required":
                errors.append(FieldError.required(f"{at}.rule", rule_error.detail))
            else:
                errors.append(FieldError.invalid(f"{at}.rule", rule_syntax(rule), rule_error.detail))
        if message_error is not None:
            errors.append(FieldError.invalid(f"{at}.messageExpression", rule_syntax(rule), message_error.detail))
        if compiled is None:
            continue
        if compiled.uses_old_self:
            if uncorrelatable is not None:
                errors.append(FieldError.invalid(
                    f"{at}.rule", str(rule.get("rule")),
                    f"oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}"))
        elif rule.get("optionalOldSelf") is not None:
            errors.append(FieldError.invalid(f"{at}.optionalOldSelf", rule.get("optionalOldSelf"),
                                             "may not be set if oldSelf is not used in rule"))
    return False
