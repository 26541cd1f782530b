"""An admission webhook's ``matchConditions``: CEL expressions that decide whether the webhook is called.

As upstream (k8s.io/apiserver ``pkg/admission/plugin/webhook/matchconditions/matcher.go``):

- each expression sees ``object`` and ``oldObject`` (``null`` when the operation has none), ``request``
  (the AdmissionRequest as the webhook would get it) and the CEL libraries kubeloop has;
- the webhook is called only when every condition is ``true``; one ``false`` skips it, whatever the
  others did; an error (a non-bool result included) with none ``false`` is :class:`ConditionError`:
  the webhook's failurePolicy decides (Ignore skips the webhook, Fail refuses the request).

``authorizer`` and ``authorizer.requestResource`` are upstream's authz library
(:mod:`kubeloop.api._cel_authorizer`), bound by the caller to the server's authorizer. Compiling reports what :mod:`kubeloop.api._cel_compile`
finds (type errors included, every variable dyn); :func:`condition_error`, for a webhook configuration being
written, also refuses a condition whose type is surely not bool (``must evaluate to bool``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import cel

from kubeloop.api._cel_authorizer import AUTHORIZER_FUNCTIONS
from kubeloop.api._cel_compile import compile_expression, compile_typed, is_definitely
from kubeloop.api._cel_library import FUNCTIONS, NAMESPACES

__all__ = ["ConditionError", "compile_condition", "condition_error", "conditions_match"]

_VARIABLES = frozenset({"object", "oldObject", "request", "authorizer", *NAMESPACES})


class ConditionError(Exception):
    """A condition could not be evaluated to a bool (and none evaluated to false)."""


@lru_cache(maxsize=1024)
def compile_condition(expression: str) -> tuple[cel.Program | None, str]:
    """The program, or None and the compile error (``compilation failed: ...``)."""
    program, error = compile_expression(expression, {}, root=False, variables=_VARIABLES,
                                        functions=AUTHORIZER_FUNCTIONS)
    return (program, "") if program is not None else (None, "compilation failed: " + error)


def condition_error(expression: str) -> str:
    """Why a webhook could not be written with ``expression`` as a matchCondition, or ``""``: a compile
    error, or a result that is surely not a bool (upstream's ``must evaluate to bool``, the matchCondition's
    ``ReturnTypes``)."""
    program, error, result = compile_typed(expression, {}, root=False, variables=_VARIABLES,
                                           functions=AUTHORIZER_FUNCTIONS)
    if program is None:
        return "compilation failed: " + error
    return "must evaluate to bool" if is_definitely(result, ("bool",)) else ""


def conditions_match(conditions: Sequence[Mapping[str, Any]], obj: Any, old: Any, request: Mapping[str, Any], *,
                     authorizer: Mapping[str, Any] | None = None, functions: Mapping[str, Any] | None = None) -> bool:
    """Whether every condition holds; raises :class:`ConditionError` for an error with no false result.
    ``authorizer`` and ``functions``: the request's (:mod:`kubeloop.api._cel_authorizer`), when a condition
    reads ``authorizer``."""
    if not conditions:
        return True
    activation = {**NAMESPACES, "object": obj, "oldObject": old, "request": dict(request)}
    if authorizer is not None:
        activation["authorizer"] = authorizer
    context = cel.Context(activation, FUNCTIONS if functions is None else dict(functions))
    errors: list[str] = []
    for condition in conditions:
        name = str(condition.get("name") or "")
        program, problem = compile_condition(str(condition.get("expression") or "").strip())
        if program is None:
            errors.append(f"matchCondition {name!r}: {problem}")
            continue
        try:
            result = program.execute(context)
        except Exception as exc:  # the engine's errors: KeyError, TypeError, RuntimeError ...
            errors.append(f"failed evaluating match condition {name!r}: {exc}")
            continue
        if result is False:
            return False
        if result is not True:
            errors.append(f"matchCondition {name!r}: expected a bool result, got {type(result).__name__}")
    if errors:
        raise ConditionError("; ".join(errors))
    return True
