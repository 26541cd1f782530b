"""Running a CRD schema's ``x-kubernetes-validations`` rules on a custom resource write.

:class:`RuleValidator` is upstream's ``cel.Validator`` (k8s.io/apiextensions-apiserver
``pkg/apiserver/schema/cel/validation.go``) for one version's ``openAPIV3Schema``:

- it walks the object with the schema; at each node with rules it binds ``self`` (the node's value,
  see :mod:`kubeloop.api._cel_values`) and ``oldSelf`` (the same node of the stored object, when one
  correlates: object fields and map entries by key, ``x-kubernetes-list-type: map`` items by their
  map keys; never other list items) and runs each rule; ``null`` values are not validated;
- a transition rule (one that reads ``oldSelf``) runs only when an old value correlates, unless it
  sets ``optionalOldSelf``: then ``oldSelf`` is an optional (``oldSelf.hasValue()``);
- only a ``true`` result passes. A failure is a :class:`FieldError` at the node's path (``<nil>`` for
  the root, as upstream's nil ``field.Path`` prints), or at the rule's ``fieldPath`` below it, whose
  value is the node's schema type: ``spec: Invalid value: "object": <message>``. The message is the
  ``messageExpression`` result when that evaluates to a usable string, else ``message``, else
  ``failed rule: <rule>``; ``reason`` picks Forbidden, Required or Duplicate instead of Invalid;
- a runtime error is ``<error> evaluating rule: <rule>`` (``no such key: x``, ``division by zero``),
  or ``'no such overload': call arguments did not match ...`` for operand types;
- ratcheting (CRDValidationRatcheting, on by default in 1.32): on update, a failed rule that does
  not read ``oldSelf`` at a node whose correlated old value is unchanged (or, for a node that does not
  correlate, whose nearest correlated ancestor is unchanged) is a warning, not an error.

Not modelled: the runtime cost budget (rules are not metered) and cel-go's type checker
(see :mod:`kubeloop.api._cel_compile`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cel

from kubeloop.api._cel_compile import CompiledRule, compile_rule
from kubeloop.api._cel_library import FUNCTIONS, NAMESPACES
from kubeloop.api._cel_values import to_cel
from kubeloop.api._errors import FieldError

__all__ = ["RuleValidator", "field_path_segments", "has_rules"]

Schema = Mapping[str, Any]
# The engine logs each failed Python function call; the failure reaches us as the call's error.
logging.getLogger("cel").addHandler(logging.NullHandler())
logging.getLogger("cel").propagate = False

_MAX_MESSAGE = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes


def has_rules(schema: Any) -> bool:
    """Whether ``schema`` or anything under it has ``x-kubernetes-validations``."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    props = schema.get("properties")
    if isinstance(props, Mapping) and any(has_rules(s) for s in props.values()):
        return True
    return (has_rules(schema.get("additionalProperties")) or has_rules(schema.get("items"))
            or any(has_rules(s) for s in schema.get("allOf") or ()))


@dataclass
class _Node:
    schema: Schema
    rules: list[CompiledRule] = field(default_factory=list)
    props: dict[str, _Node] = field(default_factory=dict)
    additional: _Node | None = None
    items: _Node | None = None
    all_of: list[_Node] = field(default_factory=list)
    root: bool = False


def _build(schema: Schema, *, root: bool = False) -> _Node | None:
    if not has_rules(schema):
        return None
    node = _Node(schema, root=root)
    for rule in schema.get("x-kubernetes-validations") or ():
        if isinstance(rule, Mapping):
            compiled, _, _ = compile_rule(rule, schema, root=root)
            if compiled is not None:  # the CRD's validation refused rules that do not compile
                node.rules.append(compiled)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping) and (child := _build(sub)) is not None:
                node.props[name] = child
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        node.additional = _build(extra)
    items = schema.get("items")
    if isinstance(items, Mapping):
        node.items = _build(items)
    for sub in schema.get("allOf") or ():
        if isinstance(sub, Mapping) and (child := _build(sub, root=root)) is not None:
            node.all_of.append(child)
    return node


@dataclass(frozen=True, slots=True)
class _Ratchet:
    """The correlated (new, old) pair of this node, or of its nearest correlated ancestor."""

    current: tuple[Any, Any] | None
    parent: tuple[Any, Any] | None

    def should_ratchet(self) -> bool:
        pair = self.current if self.current is not None else self.parent
        return pair is not None and pair[0] == pair[1]

    def key(self, name: str) -> _Ratchet:
        if self.current is None:
            return self
        old = self.current[1]
        new = self.current[0]
        pair = None
        if isinstance(old, dict) and name in old and isinstance(new, dict):
            pair = (new.get(name), old[name])
        return _Ratchet(pair, self.current)

    def index(self, new_item: Any, old_item: Any, correlated: bool) -> _Ratchet:
        if self.current is None:
            return self
        return _Ratchet((new_item, old_item) if correlated else None, self.current)


_NO_OLD = object()


def _child(path: str | None, name: str) -> str:
    return name if path is None else f"{path}.{name}"


def _key_of(item: Any, keys: list[str]) -> tuple[Any, ...]:
    return tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else ()


class RuleValidator:
    """The rules of one ``openAPIV3Schema``, compiled once, run on each write of a custom resource."""

    def __init__(self, schema: Schema) -> None:
        self._root = _build(schema, root=True)

    @property
    def empty(self) -> bool:
        return self._root is None

    def validate(self, obj: Any, old: Any | None, warnings: list[str]) -> list[FieldError]:
        """Every rule failure for ``obj`` (``old``: the stored object on update); ratcheted ones go to
        ``warnings`` as upstream's warning texts."""
        if self._root is None:
            return []
        errors: list[FieldError] = []
        ratchet = _Ratchet((obj, old), None) if old is not None else _Ratchet(None, None)
        self._walk(self._root, None, obj, old if old is not None else _NO_OLD, ratchet, errors, warnings)
        return errors

    def _walk(self, node: _Node, path: str | None, value: Any, old: Any, ratchet: _Ratchet,
              errors: list[FieldError], warnings: list[str]) -> None:
        if value is None:
            return
        if node.rules:
            self._run(node, path, value, old, ratchet, errors, warnings)
        for sub in node.all_of:  # allOf errors are not ratcheted (validation.go)
            self._walk(sub, path, value, old, _Ratchet(None, ratchet.parent), errors, warnings)
        if isinstance(value, dict):
            old_map = old if isinstance(old, dict) else {}
            is_map = not node.schema.get("properties") and node.additional is not None
            for name, item in value.items():
                if is_map:
                    child = node.additional
                    sub_path = f"{path}[{name}]" if path is not None else f"[{name}]"
                else:
                    child = node.props.get(name)
                    sub_path = _child(path, name)
                if child is not None:
                    self._walk(child, sub_path, item, old_map.get(name, _NO_OLD), ratchet.key(name), errors, warnings)
        elif isinstance(value, list) and node.items is not None:
            self._walk_list(node, path, value, old, ratchet, errors, warnings)

    def _walk_list(self, node: _Node, path: str | None, value: list[Any], old: Any, ratchet: _Ratchet,
                   errors: list[FieldError], warnings: list[str]) -> None:
        assert node.items is not None
        list_type = node.schema.get("x-kubernetes-list-type")
        keys = [str(k) for k in node.schema.get("x-kubernetes-list-map-keys") or ()]
        old_by_key: dict[tuple[Any, ...], Any] = {}
        if list_type == "map" and isinstance(old, list):
            for item in old:
                old_by_key.setdefault(_key_of(item, keys), item)
        for i, item in enumerate(value):
            if list_type == "map" and _key_of(item, keys) in old_by_key:
                old_item = old_by_key[_key_of(item, keys)]
                sub_ratchet = ratchet.index(item, old_item, True)
            elif list_type == "set" and isinstance(old, list) and item in old:
                old_item, sub_ratchet = _NO_OLD, ratchet.index(item, item, True)
            else:
                old_item, sub_ratchet = _NO_OLD, ratchet.index(item, None, False)
            self._walk(node.items, f"{path}[{i}]" if path is not None else f"[{i}]", item, old_item,
                       sub_ratchet, errors, warnings)

    def _run(self, node: _Node, path: str | None, value: Any, old: Any, ratchet: _Ratchet,
             errors: list[FieldError], warnings: list[str]) -> None:
        schema_type = str(node.schema.get("type") or "")
        self_value = to_cel(value, node.schema, resource_root=node.root)
        old_value = to_cel(old, node.schema, resource_root=node.root) if old is not _NO_OLD else None
        variables: dict[str, Any] = {**NAMESPACES, "self": self_value}
        if old is not _NO_OLD:
            variables["oldSelf"] = old_value
        # One context per binding, shared by the node's rules: building one wraps every library function.
        contexts: dict[bool, cel.Context] = {}
        for compiled in node.rules:
            rule = compiled.rule
            optional = rule.get("optionalOldSelf") is True and compiled.uses_old_self
            if compiled.uses_old_self and old is _NO_OLD and not optional:
                continue  # a transition rule needs a correlated old value
            context = contexts.get(optional)
            if context is None:
                bound = dict(variables)
                if optional:
                    bound["oldSelf"] = (cel.OptionalValue.of(old_value) if old is not _NO_OLD
                                        else cel.OptionalValue.none())
            shown = _rule_text(rule)
            try:
                if context is None:
                    context = contexts[optional] = cel.Context(bound, FUNCTIONS)
                result = compiled.program.execute(context)
            except Exception as e:  # the engine's errors: KeyError, TypeError, OverflowError, RuntimeError...
                errors.append(FieldError.invalid(_show(path), schema_type, _runtime_error(e, shown)))
                continue
            if result is True:
                continue
            target = path
            field_path = str(rule.get("fieldPath") or "").strip()
            if field_path:
                segments = field_path_segments(field_path)
                if segments is not None:
                    target = _child(path, _normalized(segments, node.schema))
            detail = self._message(compiled, context) or _default_message(rule)
            error = _error_for_reason(_show(target), schema_type, detail, rule.get("reason"))
            if not compiled.uses_old_self and ratchet.should_ratchet():
                warnings.append(str(error))
            else:
                errors.append(error)

    @staticmethod
    def _message(compiled: CompiledRule, context: cel.Context) -> str:
        if compiled.message_program is None:
            return ""
        try:
            text = compiled.message_program.execute(context)
        except Exception:  # upstream logs it and falls back to the message
            return ""
        if not isinstance(text, str):
            return ""
        text = text.strip()
        if not text or "\n" in text or len(text.encode()) > _MAX_MESSAGE:
            return ""
        return text


def _show(path: str | None) -> str:
    return "<nil>" if path is None else path


def _rule_text(rule: Mapping[str, Any]) -> str:
    """ruleErrorString: the message if set, else the rule, trimmed."""
    message = str(rule.get("message") or "").strip()
    return message or str(rule.get("rule") or "").strip()


def _default_message(rule: Mapping[str, Any]) -> str:
    message = str(rule.get("message") or "").strip()
    return message or f"failed rule: {_rule_text(rule)}"


def _error_for_reason(path: str, schema_type: str, detail: str, reason: Any) -> FieldError:
    if reason == "FieldValueForbidden":
        return FieldError.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return FieldError.required(path, detail)
    if reason == "FieldValueDuplicate":
        return FieldError.duplicate(path, schema_type)
    return FieldError.invalid(path, schema_type, detail)


_FUNCTION_FAILED = re.compile(r"Python function call failed: \w+: (.*)\. Check function arguments", re.S)


def _runtime_error(error: Exception, shown: str) -> str:
    """Upstream's text for a rule that failed to evaluate (validation.go validateExpressions)."""
    text = str(error)
    if isinstance(error, KeyError):
        key = error.args[0] if error.args else text
        return f"no such key: {key} evaluating rule: {shown}"
    if isinstance(error, OverflowError):
        return f"integer overflow evaluating rule: {shown}"
    if isinstance(error, ZeroDivisionError):
        what = "modulus" if "mod" in text or "rem" in text else "division"
        return f"{what} by zero evaluating rule: {shown}"
    if isinstance(error, IndexError):
        return f"{text} evaluating rule: {shown}"
    match = _FUNCTION_FAILED.search(text)
    if match:
        inner = match.group(1)
        if inner.startswith("no such overload"):
            return f"'{inner}': call arguments did not match a supported operator, function or macro signature for rule: {shown}"
        return f"{inner} evaluating rule: {shown}"
    if isinstance(error, TypeError) or "No such overload" in text:
        return ("'no such overload': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {shown}")
    return f"{text} evaluating rule: {shown}"


_SEGMENT = re.compile(r"\.([^.\[\]]+)|\['((?:\\.|[^'\\])*)'\]")


def field_path_segments(text: str) -> list[str] | None:
    """The names of a rule's ``fieldPath`` (``.spec.foo``, ``.m['a.b']``), or None when it does not parse."""
    segments: list[str] = []
    position = 0
    while position < len(text):
        match = _SEGMENT.match(text, position)
        if match is None:
            return None
        segments.append(match.group(1) if match.group(1) is not None else re.sub(r"\\(.)", r"\1", match.group(2)))
        position = match.end()
    return segments or None


def _normalized(segments: list[str], schema: Schema) -> str:
    """The field.Path string upstream's ValidFieldPath builds: ``a.b`` for properties, ``a[k]`` for map keys."""
    out = ""
    node: Schema | None = schema
    for name in segments:
        props = node.get("properties") if node is not None else None
        if isinstance(props, Mapping) and props:
            out = name if not out else f"{out}.{name}"
            sub = props.get(name)
            node = sub if isinstance(sub, Mapping) else None
        else:
            out = f"{out}[{name}]"
            extra = node.get("additionalProperties") if node is not None else None
            node = extra if isinstance(extra, Mapping) else None
    return out
