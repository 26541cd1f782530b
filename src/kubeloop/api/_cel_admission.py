"""CEL expressions of a ValidatingAdmissionPolicy: compiled when the policy is written, run on admission.

Upstream compiles a policy's expressions (k8s.io/apiserver ``pkg/admission/plugin/cel/compile.go``
``CompileCELExpression``, and ``composition.go`` for ``variables``) in an environment that declares:

- ``object``, ``oldObject``, ``request``, ``namespaceObject``: always;
- ``params``: only when the policy has a ``paramKind`` (else ``undeclared reference to 'params'``);
- ``authorizer`` (and ``authorizer.requestResource``): for validations, variables, matchConditions and
  auditAnnotations, not for a ``messageExpression``;
- ``variables``: when the policy declares variables; each variable sees only those declared before it,
  and ``variables.x`` of an undeclared ``x`` is ``undefined field 'x'``.

:func:`compile_policy_expression` reports upstream's ``compilation failed: ERROR: <input>:L:C: ...``
for what :mod:`kubeloop.api._cel_compile` finds (syntax, undeclared names, bad literals, and the type
errors of :mod:`kubeloop.api._cel_check`), then checks the result type against the expression's
``ReturnTypes`` (``must evaluate to bool``). ``object``, ``oldObject``, ``params``, ``request``,
``namespaceObject`` and ``variables.x`` are typed dyn here (upstream types ``request`` and
``namespaceObject``, and each variable by its expression), so a result built only from them is never
refused, though upstream refuses a dyn result (``object.spec.enabled`` as a validation); at admission a
validation whose result is not ``true`` fails, as upstream's runtime does.

:func:`evaluate` runs a program on an activation (a dict of the names above) and raises
:class:`EvaluationError` with cel-go's text of the failure (``no such key: x``, ``division by zero``,
``no such overload``). ``authorizer`` is the caller's (:mod:`kubeloop.api._cel_authorizer`, bound to the
server's authorizer by :func:`with_authorizer`); without one in the activation, an expression that reads
it fails (its policy's ``failurePolicy`` decides), though it compiles.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import cel

from kubeloop.api._cel_authorizer import AUTHORIZER_FUNCTIONS, Decide, authorizer_functions
from kubeloop.api._cel_compile import _blank_strings, _excerpt, compile_typed, is_definitely
from kubeloop.api._cel_library import FUNCTIONS, NAMESPACES

__all__ = ["CompiledExpression", "EvaluationError", "compile_policy_expression", "evaluate", "return_type_error",
           "uses_authorizer",
           "variable_references", "with_authorizer"]

logging.getLogger("cel").addHandler(logging.NullHandler())
logging.getLogger("cel").propagate = False

_ALWAYS = frozenset({"object", "oldObject", "request", "namespaceObject", *NAMESPACES})
_VARIABLE_SELECT = re.compile(r"(?<![A-Za-z0-9_.])variables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class CompiledExpression:
    """A compiled expression and the policy variables it reads (``variables.<name>``)."""

    source: str
    program: cel.Program
    variables: frozenset[str]


class EvaluationError(Exception):
    """An expression failed at run time; ``str()`` is cel-go's error text."""


def variable_references(source: str) -> frozenset[str]:
    """The names ``x`` of every ``variables.x`` in ``source`` (string literals skipped)."""
    return frozenset(_VARIABLE_SELECT.findall(_blank_strings(source)))


def compile_policy_expression(
    source: str,
    *,
    has_params: bool,
    has_authorizer: bool,
    variables: Iterable[str] | None,
    returns: tuple[str, ...] = (),
) -> tuple[CompiledExpression | None, str]:
    """The compiled expression, or None and upstream's error detail (``compilation failed: ...``).

    ``variables``: the names of the variables declared before this expression (``None`` when the policy
    declares none, so ``variables`` itself is undeclared). ``returns``: the type names the result may have
    (upstream's ``ReturnTypes``: bool for a validation or matchCondition, string for a messageExpression,
    string or null_type for an auditAnnotation's valueExpression; empty for a variable, of any type)."""
    declared = set(_ALWAYS)
    if has_params:
        declared.add("params")
    if has_authorizer:
        declared.add("authorizer")
    known = frozenset(variables) if variables is not None else None
    if known is not None:
        declared.add("variables")
    program, error, result = compile_typed(source, {}, root=False, variables=frozenset(declared),
                                           functions=AUTHORIZER_FUNCTIONS)
    if program is None:
        return None, "compilation failed: " + error
    used = variable_references(source)
    if known is not None:
        scanned = _blank_strings(source)
        for match in _VARIABLE_SELECT.finditer(scanned):
            if match.group(1) not in known:
                dot = scanned.index(".", match.start())
                return None, "compilation failed: " + _excerpt(source, dot, f"undefined field '{match.group(1)}'")
    if returns and is_definitely(result, returns):
        return None, return_type_error(returns)
    return CompiledExpression(source, program, used), ""


def return_type_error(returns: tuple[str, ...]) -> str:
    """Upstream's detail for a result of another type than ``returns`` (``must evaluate to bool``, ``must
    evaluate to one of [string null_type]``: cel ``Type.String()`` names, Go's ``%v`` of the list)."""
    if len(returns) == 1:
        return f"must evaluate to {returns[0]}"
    return f"must evaluate to one of [{' '.join(returns)}]"


def evaluate(expression: CompiledExpression, activation: Mapping[str, Any],
             functions: Mapping[str, Any] | None = None) -> Any:
    """The value of ``expression`` on ``activation``, or :class:`EvaluationError`. ``functions``: the
    functions to call instead of the CEL libraries' (:func:`with_authorizer`'s, for an ``authorizer``)."""
    try:
        return expression.program.execute(cel.Context({**NAMESPACES, **activation},
                                                      FUNCTIONS if functions is None else dict(functions)))
    except Exception as e:  # the engine's errors: KeyError, TypeError, ZeroDivisionError, RuntimeError...
        raise EvaluationError(_error_text(e)) from None


def with_authorizer(decide: Decide) -> dict[str, Any]:
    """The CEL libraries' functions and the ``authorizer`` library's, its checks answered by ``decide``."""
    return {**FUNCTIONS, **authorizer_functions(decide)}


def uses_authorizer(source: str) -> bool:
    """Whether ``source`` reads ``authorizer`` (string literals skipped): only then is one built."""
    return _AUTHORIZER.search(_blank_strings(source)) is not None


_AUTHORIZER = re.compile(r"(?<![A-Za-z0-9_.])authorizer(?![A-Za-z0-9_])")
_FUNCTION_FAILED = re.compile(r"Python function call failed: \w+: (.*)\. Check function arguments", re.S)
_UNDEFINED = re.compile(r"Undefined variable or function: '([^']*)'")


def _error_text(error: Exception) -> str:
    text = str(error)
    if isinstance(error, KeyError):
        return f"no such key: {error.args[0] if error.args else text}"
    if isinstance(error, OverflowError):
        return "integer overflow"
    if isinstance(error, ZeroDivisionError):
        return "modulus by zero" if "mod" in text or "rem" in text else "division by zero"
    match = _FUNCTION_FAILED.search(text)
    if match:
        return match.group(1)
    if isinstance(error, TypeError) or "No such overload" in text:
        return "no such overload"
    match = _UNDEFINED.search(text)
    if match:
        if match.group(1) == "authorizer":
            return "authorizer is not available in kubeloop"
        return f"no such attribute(s): {match.group(1)}"
    return text
