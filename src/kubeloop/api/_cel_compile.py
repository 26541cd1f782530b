"""Compiling one ``x-kubernetes-validations`` rule (and its ``messageExpression``) for a schema node.

What upstream's ``cel.Compile`` (k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/cel/compilation.go``)
reports (the engine parses and runs; kubeloop's own checks stand in for cel-go's checker):

- a syntax error: ``compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input ...`` with
  cel-go's source excerpt and caret (the parser is an ANTLR build of the same CEL grammar);
- an unknown variable or function: ``undeclared reference to 'x' (in container '')``;
- a field the schema does not declare, selected from ``self``/``oldSelf`` (``self.spec.replicsa``, or
  ``self.metadata.labels`` at the root, where only name and generateName are typed):
  ``undefined field 'replicsa'``;
- whether the rule reads ``oldSelf`` (a transition rule);
- a literal pattern, duration or timestamp that cannot work (``self.matches('[')``,
  ``duration('1x')``): ``invalid matches argument`` (cel-go's AST validators, 1.29+);
- a type error (:mod:`kubeloop.api._cel_check`, with ``self``/``oldSelf`` typed from the schema by
  :mod:`kubeloop.api._cel_types`): ``found no matching overload for '_+_' applied to '(string, int)'``
  and the checker's other errors, all of them, in position order, one excerpt each;
- a rule whose type is not bool (``cel expression must evaluate to a bool``) and a messageExpression
  whose type is not string (``messageExpression must evaluate to a string``); a ``dyn`` result is
  accepted (upstream refuses it), as the checker types as dyn what it cannot tell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cel

from kubeloop.api._cel_check import check
from kubeloop.api._cel_library import FUNCTIONS, NAMESPACES
from kubeloop.api._cel_types import DYN, CelType, optional_of, schema_type
from kubeloop.api._cel_values import go_duration, timestamp_of, unescape

__all__ = ["CompiledRule", "RuleError", "compile_expression", "compile_rule", "compile_typed", "is_definitely",
           "rule_types"]

Schema = Mapping[str, Any]

# CEL's standard functions (the macros has/all/exists/exists_one/map/filter expand away).
_STANDARD = frozenset({
    "size", "matches", "startsWith", "endsWith", "contains", "string", "int", "uint", "double", "bytes",
    "bool", "duration", "timestamp", "type", "dyn", "getFullYear", "getMonth", "getDayOfYear",
    "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    "optional.of", "optional.none", "optional.ofNonZeroValue", "hasValue", "value", "orValue", "or",
})
_KNOWN_FUNCTIONS = _STANDARD | frozenset(FUNCTIONS)
_OPTIONAL_FUNCTIONS = frozenset({"of", "none", "ofNonZeroValue"})
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
_COMPREHENSION = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_STRING = re.compile(r"""(?s)[rRbB]{0,2}('''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""")
_SELECT_CHAIN = re.compile(r"\b(self|oldSelf)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)+)")
_MEMBER = re.compile(r"\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class RuleError:
    """Why a rule does not compile: ``required`` (an empty rule) or ``invalid``, and upstream's detail."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule ready to run: its program, its messageExpression's, and whether it reads ``oldSelf``."""

    rule: Mapping[str, Any]
    program: cel.Program
    message_program: cel.Program | None
    uses_old_self: bool


def _excerpt(source: str, offset: int, text: str) -> str:
    """cel-go's error form: ``ERROR: <input>:L:C: text`` then the line and a caret under column C."""
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    line = source[line_start : line_end if line_end >= 0 else len(source)]
    column = offset - line_start
    number = source.count("\n", 0, offset) + 1
    return f"ERROR: <input>:{number}:{column + 1}: {text}\n | {line}\n | {'.' * column}^"


def _blank_strings(source: str) -> str:
    """``source`` with every string literal's inside blanked (offsets kept), so scans skip literals."""
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], source)


def _parse(source: str) -> tuple[cel.Program | None, str]:
    try:
        return cel.compile(source), ""
    except ValueError as e:
        text = str(e)
        prefix = f"Failed to parse expression '{source}': "
        text = text[len(prefix):] if text.startswith(prefix) else text
        return None, text.replace("\n| ", "\n | ")


def _undeclared(program: cel.Program, source: str, scanned: str, variables: frozenset[str],
                functions: frozenset[str]) -> str:
    bound = set(_COMPREHENSION.findall(scanned)) | variables
    namespaced: frozenset[str] = frozenset()
    if "optional" in program.variables():
        # the engine's own optional.of/none/ofNonZeroValue (cel-go's OptionalTypes, in Kubernetes' base
        # environment): it lists the namespace as a variable and the functions by their last name
        bound.add("optional")
        namespaced = _OPTIONAL_FUNCTIONS
    for name in program.variables():
        if name not in bound and name not in _TYPE_NAMES and not name.startswith("@"):
            return _reference_error(source, scanned, name)
    for name in program.functions():
        if name[:1] in ("_", "@", "!") or name in _KNOWN_FUNCTIONS or name in functions or name in namespaced:
            continue
        return _reference_error(source, scanned, name)
    return ""


def _reference_error(source: str, scanned: str, name: str) -> str:
    match = re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", scanned)
    return _excerpt(source, match.start() if match else 0, f"undeclared reference to '{name}' (in container '')")


def _typed_meta(schema: Schema, root: bool) -> bool:
    return root or bool(schema.get("x-kubernetes-embedded-resource"))


def _field(schema: Schema, ident: str, root: bool) -> tuple[Schema | None, bool]:
    """The schema of field ``ident`` of ``schema``, and whether the field is declared."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        return None, True
    if _typed_meta(schema, root):
        if ident in ("apiVersion", "kind"):
            return {"type": "string"}, True
        if ident == "metadata":
            return _META, True
    props = schema.get("properties")
    if isinstance(props, Mapping) and props:
        sub = props.get(unescape(ident))
        return (sub, True) if isinstance(sub, Mapping) else (None, False)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra, True
    return None, True  # an object without properties, a list or a scalar: not checked here


_META: Schema = {"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}


def _undefined_field(source: str, scanned: str, schema: Schema, root: bool) -> str:
    for chain in _SELECT_CHAIN.finditer(scanned):
        node: Schema | None = schema
        at_root = root
        for member in _MEMBER.finditer(chain.group(2)):
            end = chain.start(2) + member.end()
            if scanned[end:].lstrip().startswith("("):
                break  # a method call, not a field
            if node is None:
                break
            node, declared = _field(node, member.group(1), at_root)
            at_root = False
            if not declared:
                dot = chain.start(2) + member.start() + member.group(0).index(".")
                return _excerpt(source, dot, f"undefined field '{member.group(1)}'")
    return ""


_LITERAL_CALL = re.compile(
    r"""(?:\.\s*(matches)|\b(duration|timestamp))\s*\(\s*(?P<lit>'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")\s*\)""")
# RE2, which cel-go compiles patterns with, has no lookaround and no backreferences (Python's re has both).
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


def _literal(text: str) -> str:
    body = text[1:-1]
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in body else body
    except UnicodeDecodeError:
        return body


def _literal_ok(function: str, value: str) -> bool:
    if function == "matches":
        if _NOT_RE2.search(value):
            return False
        try:
            re.compile(value)
        except re.error:
            return False
        return True
    if function == "duration":
        return go_duration(value) is not None
    return timestamp_of(value) is not None


def _invalid_literal(source: str) -> str:
    """cel-go's AST validators (ValidateRegexLiterals, ValidateDurationLiterals, ValidateTimestampLiterals,
    in the base environment since 1.29): a literal argument that cannot work is a compile error."""
    for call in _LITERAL_CALL.finditer(source):
        function = call.group(1) or call.group(2)
        if not _literal_ok(function, _literal(call.group("lit"))):
            return _excerpt(source, call.start("lit"), f"invalid {function} argument")
    return ""


def compile_expression(source: str, schema: Schema, *, root: bool, variables: frozenset[str],
                       functions: frozenset[str] = frozenset()) -> tuple[cel.Program | None, str]:
    """The program of ``source``, or None and cel-go's error text (without ``compilation failed: ``).
    ``functions``: more functions the environment declares (the admission ``authorizer`` library's)."""
    program, error, _ = compile_typed(source, schema, root=root, variables=variables, functions=functions)
    return program, error


def compile_typed(source: str, schema: Schema, *, root: bool, variables: frozenset[str],
                  functions: frozenset[str] = frozenset(), types: Mapping[str, CelType] | None = None,
                  ) -> tuple[cel.Program | None, str, CelType]:
    """:func:`compile_expression`, type-checked (:mod:`kubeloop.api._cel_check`) with ``types`` (the typed
    variables; any other is dyn), and the expression's type (dyn when it does not compile)."""
    program, error = _parse(source)
    if program is None:
        return None, error, DYN
    scanned = _blank_strings(source)
    error = (_undeclared(program, source, scanned, variables, functions) or _undefined_field(source, scanned, schema, root)
             or _invalid_literal(source))
    if error:
        return None, error, DYN
    result, issues = check(source, types or {})
    if issues:
        return None, "\n".join(_excerpt(source, offset, text) for offset, text in issues), DYN
    return program, "", result


def rule_types(rule: Mapping[str, Any], schema: Schema, *, root: bool) -> dict[str, CelType]:
    """``self`` and ``oldSelf`` typed from the rule's schema node (``oldSelf`` optional under
    ``optionalOldSelf: true``, as apiextensions' ``compilation.go`` declares it)."""
    own = schema_type(schema, root=root)
    return {"self": own, "oldSelf": optional_of(own) if rule.get("optionalOldSelf") is True else own}


def is_definitely(kind: CelType, expected: tuple[str, ...]) -> bool:
    """Whether ``kind`` is surely not one of ``expected``: dyn might be any (upstream refuses a dyn result,
    but kubeloop's checker types as dyn what it cannot tell, so it does not refuse one)."""
    return kind.name != "dyn" and kind.name not in expected


_RULE_VARIABLES = frozenset({"self", "oldSelf", *NAMESPACES})


def compile_rule(
    rule: Mapping[str, Any], schema: Schema, *, root: bool
) -> tuple[CompiledRule | None, RuleError | None, RuleError | None]:
    """The compiled rule, the rule's error, the messageExpression's error (one of the first two is None)."""
    source = str(rule.get("rule") or "")
    if not source.strip():
        return None, RuleError("required", "rule is not specified"), None
    types = rule_types(rule, schema, root=root)
    program, error, result = compile_typed(source, schema, root=root, variables=_RULE_VARIABLES, types=types)
    if program is not None and is_definitely(result, ("bool",)):
        program, error = None, ""
        rule_error: RuleError | None = RuleError("invalid", "cel expression must evaluate to a bool")
    else:
        rule_error = RuleError("invalid", "compilation failed: " + error) if program is None else None
    message_program = None
    message_error = None
    message = rule.get("messageExpression")
    if isinstance(message, str) and message.strip():
        message_program, error, result = compile_typed(message, schema, root=root, variables=_RULE_VARIABLES,
                                                       types=types)
        if message_program is None:
            message_error = RuleError("invalid", "messageExpression compilation failed: " + error)
        elif is_definitely(result, ("string",)):
            message_program = None
            message_error = RuleError("invalid", "messageExpression must evaluate to a string")
    if program is None:
        return None, rule_error, message_error
    uses_old_self = "oldSelf" in program.variables()
    return CompiledRule(rule, program, message_program, uses_old_self), None, message_error
