"""One ValidatingAdmissionPolicy, compiled, judging one request with one param: its decisions.

Upstream's ``validator.Validate`` (k8s.io/apiserver ``pkg/admission/plugin/policy/validating/validator.go``)
with the match-condition matcher (``pkg/admission/plugin/webhook/matchconditions/matcher.go``) and the
CEL filter (``pkg/admission/plugin/cel/filter.go``), in order:

1. ``matchConditions``: a condition that is ``false`` means the policy does not apply (no decision);
   otherwise, conditions that failed to evaluate give one error decision, deny under
   ``failurePolicy: Fail``, nothing under ``Ignore`` (several errors are listed ``[e1, e2]``);
2. ``validations``, one decision each: ``true`` admits; an evaluation error is
   ``expression '<expr>' resulted in error: <cel error>`` (deny under Fail, admit under Ignore); any other
   result denies, with the validation's ``reason`` (default Invalid) and the first usable message of:
   ``messageExpression``'s result (a non-empty string of one line, at most 5 KiB, trimmed), ``message``,
   ``failed expression: <expr>``;
3. ``auditAnnotations``: a value expression that fails, or gives something else than a string or null,
   denies under Fail (upstream's text). Published values go to upstream's audit log; kubeloop has none
   for them, so they are evaluated and dropped.

``variables`` are evaluated lazily, once per request and param: only those an expression reads
(``variables.x``), and those they read, in declaration order; a variable's error is the error of the
expression that reads it. The CEL engine is imported with this module: the admission plugin imports it
only once a binding exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubeloop.api._cel_admission import (
    CompiledExpression,
    EvaluationError,
    compile_policy_expression,
    evaluate,
    uses_authorizer,
)

__all__ = ["CompiledPolicy", "Decision"]

_MAX_MESSAGE = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes


class Decision(NamedTuple):
    """``action`` admit or deny; ``error`` when the deny (or admit) comes from an evaluation error;
    ``direct`` for a deny that refuses whatever the binding's actions (an audit annotation's error)."""

    action: str
    message: str = ""
    reason: str = ""
    error: bool = False
    direct: bool = False


@dataclass(frozen=True, slots=True)
class _Expression:
    source: str
    compiled: CompiledExpression | None
    error: str


def _compile(source: Any, *, has_params: bool, has_authorizer: bool, variables: list[str] | None) -> _Expression:
    text = str(source or "")
    compiled, error = compile_policy_expression(text, has_params=has_params, has_authorizer=has_authorizer,
                                                variables=variables)
    return _Expression(text, compiled, error)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class CompiledPolicy:
    """A policy's expressions, compiled once per stored version of the policy."""

    def __init__(self, policy: Mapping[str, Any]) -> None:
        spec = _dict(policy.get("spec"))
        has_params = spec.get("paramKind") is not None
        self.fail = spec.get("failurePolicy") != "Ignore"
        self._conditions = [_compile(_dict(c).get("expression"), has_params=has_params, has_authorizer=True,
                                     variables=None) for c in _list(spec.get("matchConditions"))]
        declared: list[str] = []
        self._variables: dict[str, _Expression] = {}
        has_variables = bool(_list(spec.get("variables")))
        for variable in _list(spec.get("variables")):
            name = str(_dict(variable).get("name") or "")
            self._variables[name] = _compile(_dict(variable).get("expression"), has_params=has_params,
                                             has_authorizer=True, variables=list(declared))
            declared.append(name)
        names = declared if has_variables else None
        self._validations: list[tuple[Mapping[str, Any], _Expression, _Expression | None]] = []
        for validation in _list(spec.get("validations")):
            validation = _dict(validation)
            message = str(validation.get("messageExpression") or "")
            message_expression = (_compile(message, has_params=has_params, has_authorizer=False, variables=names)
                                  if message.strip() else None)
            self._validations.append((validation, _compile(validation.get("expression"), has_params=has_params,
                                                           has_authorizer=True, variables=names), message_expression))
        self._annotations = [_compile(str(_dict(a).get("valueExpression") or "").strip(), has_params=has_params,
                                      has_authorizer=True, variables=names) for a in _list(spec.get("auditAnnotations"))]
        expressions = [*self._conditions, *self._variables.values(), *(v[1] for v in self._validations),
                       *self._annotations]
        # Whether an expression reads ``authorizer``: only then does a request pay for one.
        self.uses_authorizer = any(uses_authorizer(e.source) for e in expressions)

    def decide(self, activation: Mapping[str, Any], functions: Mapping[str, Any] | None = None) -> list[Decision]:
        """The decisions for one request and param (``activation``: object, oldObject, params, request,
        namespaceObject, and ``authorizer`` with its ``functions`` when :attr:`uses_authorizer`)."""
        run = _Run(self._variables, activation, functions)
        failed: list[str] = []
        for condition in self._conditions:
            try:
                if run.value(condition) is False:
                    return []
            except EvaluationError as e:
                failed.append(str(e))
        if failed:
            if not self.fail:
                return []
            return [Decision("deny", failed[0] if len(failed) == 1 else "[" + ", ".join(failed) + "]", error=True)]
        decisions = [self._validate(run, validation, expression, message)
                     for validation, expression, message in self._validations]
        for annotation in self._annotations:
            error = self._annotation_error(run, annotation)
            if error and self.fail:
                decisions.append(Decision("deny", error, error=True, direct=True))
        return decisions

    def _validate(self, run: _Run, validation: Mapping[str, Any], expression: _Expression,
                  message: _Expression | None) -> Decision:
        try:
            result = run.value(expression)
        except EvaluationError as e:
            return Decision("deny" if self.fail else "admit", str(e), error=True)
        if result is True:
            return Decision("admit")
        text = ""
        if message is not None:
            try:
                value = run.value(message)
            except EvaluationError:
                value = None  # upstream logs it and falls back to the message
            if isinstance(value, str):
                value = value.strip()
                if len(value.encode()) <= _MAX_MESSAGE and "\n" not in value:
                    text = value
        if not text:
            text = str(validation.get("message") or "").strip()
        if not text:
            text = f"failed expression: {expression.source.strip()}"
        reason = validation.get("reason")
        return Decision("deny", text, reason if isinstance(reason, str) and reason else "Invalid")

    @staticmethod
    def _annotation_error(run: _Run, annotation: _Expression) -> str:
        try:
            value = run.value(annotation)
        except EvaluationError as e:
            return str(e)
        if value is None or isinstance(value, str):
            return ""
        return (f"valueExpression '{annotation.source}' resulted in unsupported return type: {_cel_type(value)}. "
                "Return type must be either string or null.")


def _cel_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


class _Run:
    """One evaluation: the activation and the variables computed so far."""

    def __init__(self, variables: Mapping[str, _Expression], activation: Mapping[str, Any],
                 functions: Mapping[str, Any] | None = None) -> None:
        self._declared = variables
        self._activation = activation
        self._functions = functions
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}

    def value(self, expression: _Expression) -> Any:
        """The expression's value; :class:`EvaluationError` with upstream's whole text on failure."""
        if expression.compiled is None:
            raise EvaluationError(f"compilation error: {expression.error}")
        try:
            bound = self._bind(expression.compiled.variables)
        except EvaluationError as e:
            raise EvaluationError(f"expression '{expression.source}' resulted in error: {e}") from None
        try:
            return evaluate(expression.compiled, {**self._activation, **bound}, self._functions)
        except EvaluationError as e:
            raise EvaluationError(f"expression '{expression.source}' resulted in error: {e}") from None

    def _bind(self, names: frozenset[str]) -> dict[str, Any]:
        if not self._declared:
            return {}
        for name in names:
            self._compute(name)
        return {"variables": dict(self._values)}

    def _compute(self, name: str) -> None:
        if name in self._values:
            return
        if name in self._errors:
            raise EvaluationError(self._errors[name])
        expression = self._declared.get(name)
        if expression is None:
            raise EvaluationError(f"no such key: {name}")
        try:
            if expression.compiled is None:
                raise EvaluationError(f'composited variable "{name}" fails to compile: {expression.error}')
            for dependency in expression.compiled.variables:
                self._compute(dependency)
            self._values[name] = evaluate(expression.compiled, {**self._activation, "variables": dict(self._values)},
                                          self._functions)
        except EvaluationError as e:
            self._errors[name] = str(e)
            raise
