"""Validation of admission ``matchConditions``, shared by webhook configurations and admission policies.

Upstream: k/k ``pkg/apis/admissionregistration/validation/validation.go`` ``validateMatchConditions`` and
``validateMatchCondition`` (1.32): at most 64 conditions (``Too many: N: must have at most 64 items``); each
a non-blank expression (trimmed) that compiles in the caller's CEL environment, and a qualified name unique
in the list (a duplicate is reported once per repeat).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._validation import is_qualified_name

__all__ = ["MAX_MATCH_CONDITIONS", "match_conditions_errors"]

MAX_MATCH_CONDITIONS = 64


def match_conditions_errors(conditions: list[Any], path: str,
                            compile_error: Callable[[str], str | None]) -> list[FieldError]:  # fmt: skip
    """The errors of ``conditions`` at ``path``; ``compile_error`` gives an expression's compile error."""
    errors: list[FieldError] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        errors.append(FieldError("too_many", path, f"{len(conditions)}: must have at most {MAX_MATCH_CONDITIONS} items"))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = condition if isinstance(condition, Mapping) else {}
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            errors.append(FieldError.required(f"{path}[{i}].expression"))
        elif problem := compile_error(expression):
            errors.append(FieldError.invalid(f"{path}[{i}].expression", expression, problem))
        name = str(condition.get("name") or "")
        if not name:
            errors.append(FieldError.required(f"{path}[{i}].name"))
        else:
            errors.extend(FieldError.invalid(f"{path}[{i}].name", name, m) for m in is_qualified_name(name))
            if name in names:
                errors.append(FieldError.duplicate(f"{path}[{i}].name", name))
            names.add(name)
    return errors
