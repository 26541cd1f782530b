"""The CEL type checker behind write-time compilation: expressions against schemas, with cel-go's messages.

Expectations are upstream's: cel-go ``checker/checker_test.go`` (``x[1u]`` on a list: ``found no matching
overload for '_[_]' applied to '(list(...), uint)'`` at 1:2; ``x.all(y, y == true)`` on a bool: ``expression of
type 'bool' cannot be range of a comprehension (must be list, map, or dynamic)`` at 1:1) and
``checker/errors.go`` (the message forms); apiextensions-apiserver ``pkg/apiserver/schema/cel/compilation_test.go``
(``{Rule: "42"}``: ``must evaluate to a bool``; a ``messageExpression`` of ``42``: ``must evaluate to a
string``) and ``compilation.go``; k8s.io/apiserver ``pkg/cel/common/schemas.go`` (``SchemaDeclType``: what a
schema node's type is); k8s.io/apiserver ``pkg/admission/plugin/cel/compile.go`` (``must evaluate to bool``,
``must evaluate to one of [string null_type]``) and the policy tests' ``114 + '514'``: ``compilation failed:
ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(int, string)'``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api._cel_admission import compile_policy_expression
from kubeloop.api._cel_check import check
from kubeloop.api._cel_compile import compile_rule
from kubeloop.api._cel_crd import validate_schema_rules
from kubeloop.api._cel_parse import parse
from kubeloop.api._cel_types import schema_type
from kubeloop.api._webhook_conditions import condition_error

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "name": {"type": "string"},
    "replicas": {"type": "integer"},
    "ratio": {"type": "number"},
    "enabled": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "counts": {"type": "array", "items": {"type": "integer"}},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "port": {"x-kubernetes-int-or-string": True},
    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "timeout": {"type": "string", "format": "duration"},
    "since": {"type": "string", "format": "date-time"},
    "data": {"type": "string", "format": "byte"},
    "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                 "x-kubernetes-preserve-unknown-fields": True},
    "nested": {"type": "object", "properties": {"size": {"type": "integer"}}},
}}


def rule_error(rule: str, schema: dict[str, Any] = SCHEMA, **extra: Any) -> str | None:
    _, error, _ = compile_rule({"rule": rule, **extra}, schema, root=True)
    return None if error is None else error.detail


def message_error(expression: str, schema: dict[str, Any] = SCHEMA) -> str | None:
    _, _, error = compile_rule({"rule": "true", "messageExpression": expression}, schema, root=True)
    return None if error is None else error.detail


def excerpt(line: int, column: int, text: str, source: str) -> str:
    return f"ERROR: <input>:{line}:{column}: {text}\n | {source}\n | {'.' * (column - 1)}^"


@pytest.mark.parametrize(("rule", "column", "text"), [
    ("self.name + 1 == 'x'", 11, "found no matching overload for '_+_' applied to '(string, int)'"),
    ("self.counts[1u] == 1", 12, "found no matching overload for '_[_]' applied to '(list(int), uint)'"),
    ("self.enabled.all(y, y == true)", 5, "expression of type 'bool' cannot be range of a comprehension "
                                          "(must be list, map, or dynamic)"),
    ("self.ratio == 1", 12, "found no matching overload for '_==_' applied to '(double, int)'"),
    ("self.replicas > 1 && self.name.startsWith(1)", 42,
     "found no matching overload for 'startsWith' applied to 'string.(int)'"),
    ("size(self.replicas) > 0", 5, "found no matching overload for 'size' applied to '(int)'"),
    ("self.name.foo == 'a'", 10, "type 'string' does not support field selection"),
    ("self.nested.sise > 0", 12, "undefined field 'sise'"),
    ("has(self.nested.sise)", 16, "undefined field 'sise'"),
    ("self.tags.exists(t, t.nope == 'a')", 22, "type 'string' does not support field selection"),
    ("self.labels['a'] == 1", 18, "found no matching overload for '_==_' applied to '(string, int)'"),
    ("self.timeout > duration('1s') && self.since < 3", 45,
     "found no matching overload for '_<_' applied to '(google.protobuf.Timestamp, int)'"),
    ("self.enabled ? 1 : 'a'", 14, "found no matching overload for '_?_:_' applied to '(bool, int, string)'"),
    ("!self.replicas", 1, "found no matching overload for '!_' applied to '(int)'"),
    ("self.tags.map(t, size(t)).all(n, n + 'a' == 'b')", 36,
     "found no matching overload for '_+_' applied to '(int, string)'"),
    ("quantity('1').add('x').isInteger()", 18,
     "found no matching overload for 'add' applied to 'kubernetes.Quantity.(string)'"),
    ("self.metadata.labels.size() > 0", 14, "undefined field 'labels'"),
])
def test_a_mistyped_rule_gets_cel_gos_error_at_its_column(rule: str, column: int, text: str) -> None:
    assert rule_error(rule) == "compilation failed: " + excerpt(1, column, text, rule)


def test_every_error_is_reported_sorted_by_position_and_joined_by_lines() -> None:
    # cel-go's Errors.ToDisplayString: each error with its excerpt, sorted by location, joined by "\n".
    rule = "self.replicas + 'xyz' > (self.replicas * 'xyz')"
    assert rule_error(rule) == "compilation failed: " + "\n".join([
        excerpt(1, 15, "found no matching overload for '_+_' applied to '(int, string)'", rule),
        excerpt(1, 40, "found no matching overload for '_*_' applied to '(int, string)'", rule)])


def test_a_position_on_a_later_line_counts_lines_and_columns() -> None:
    rule = "self.replicas > 0 &&\n  self.name + 1 == 'x'"
    assert rule_error(rule) == "compilation failed: " + excerpt(
        2, 13, "found no matching overload for '_+_' applied to '(string, int)'", "  self.name + 1 == 'x'")


@pytest.mark.parametrize("rule", ["42", "self.name", "self.replicas + 1", "self.tags", "self.labels", "self.nested",
                                  "self.timeout", "[true]", "null", "self.enabled ? 'a' : 'b'"])
def test_a_rule_that_is_not_a_bool_is_refused(rule: str) -> None:
    assert rule_error(rule) == "cel expression must evaluate to a bool"


@pytest.mark.parametrize("expression", ["42", "self.replicas", "self.tags", "self.name.size()", "true"])
def test_a_message_expression_that_is_not_a_string_is_refused(expression: str) -> None:
    assert message_error(expression) == "messageExpression must evaluate to a string"


def test_a_mistyped_message_expression_is_a_compilation_failure() -> None:
    source = "'n ' + self.replicas"
    assert message_error(source) == "messageExpression compilation failed: " + excerpt(
        1, 6, "found no matching overload for '_+_' applied to '(string, int)'", source)


@pytest.mark.parametrize("rule", [
    # schemas.go: int-or-string and preserve-unknown data are dyn; maps select their values; formats type strings
    "self.port == 80 || self.port == '80%'", "type(self.port) == string ? self.port.endsWith('%') : self.port < 5",
    "self.extra.anything.goes == 1", "self.extra.x > 1.5", "self.labels.app == 'web'", "'app' in self.labels",
    "self.labels.all(k, k.startsWith('a') && self.labels[k].size() < 63)", "self.timeout < duration('1h')",
    "self.since < timestamp('2030-01-01T00:00:00Z')", "size(self.data) < 10",
    "self.template.apiVersion == 'v1' && self.template.kind != '' && self.template.metadata.name != ''",
    "self.template.spec.anything == 1", "self.apiVersion.startsWith('example') && self.kind == 'Widget'",
    "self.metadata.name.size() < 10 && self.metadata.generateName == ''",
    # the standard library and Kubernetes' libraries, with cross-type numeric comparisons (base environment)
    "self.replicas < 2.5 && self.ratio > 1 && self.replicas >= 1u", "self.counts.sum() > 3 && self.counts.max() < 9",
    "self.tags.isSorted() && self.tags.indexOf('a') >= 0 && self.tags.join(',').size() > 0",
    "self.name.split(',').size() == 2 && self.name.lowerAscii().matches('^[a-z]+$')",
    "'%s and %d'.format([self.name, self.replicas]).size() > 0", "'%s'.format(self.tags) == 'x'",
    "'%d'.format([1]) == '1' && int(duration('1s')) == 1", "self.name.find('[0-9]+') != ''",
    "url(self.name).getHost() == 'x' && url(self.name).getQuery()['a'][0] == 'b'",
    "quantity(self.name).isLessThan(quantity('1Gi')) && quantity(self.name).add(1).sign() == 1",
    "ip(self.name).family() == 4 && cidr('10.0.0.0/8').containsIP(self.name) && ip.isCanonical(self.name)",
    "string(cidr('10.0.0.0/8').ip()) == '10.0.0.0'", "isURL(self.name) || isQuantity(self.name) || isCIDR(self.name)",
    "sets.contains(self.tags, ['a']) && sets.intersects(self.counts, [1, 2])",
    "!format.dns1123Label().validate(self.name).hasValue()", "format.named('uuid').hasValue()",
    "optional.of(self.replicas).value() == 1",
    "dyn(self.name) == 1", "self.tags.map(t, t.size()).all(n, n > 0)", "self.tags.filter(t, t != '').size() > 0",
    "self.counts.exists_one(c, c == 1) && [1, 'a'].size() == 2", "{'a': 1}.a == 1 && has({'a': 1}.a)",
    "self.name == null || self.nested != null", "int(self.ratio) == 1 && string(self.replicas) == '1'",
    "duration('1h').getMinutes() == 60 && self.since.getFullYear() > 2000",
    "self.tags == [] && self.labels == {}", "type(self.replicas) == int",
    "authorizer.group('').check('x')",  # an unknown function's result is dyn: the engine reports the name
])
def test_rules_that_type_check_compile(rule: str) -> None:
    error = rule_error(rule)
    assert error is None or "undeclared reference to 'authorizer'" in error, error


def test_optional_old_self_is_an_optional_of_self() -> None:
    rule = {"rule": "oldSelf.hasValue() ? self.replicas >= oldSelf.value().replicas : true", "optionalOldSelf": True}
    _, error, _ = compile_rule(rule, SCHEMA, root=True)
    assert error is None
    assert rule_error("oldSelf.hasValue()") == "compilation failed: " + excerpt(
        1, 17, "found no matching overload for 'hasValue' applied to 'selfType.()'", "oldSelf.hasValue()")


def test_schema_types_follow_schema_decl_type() -> None:
    assert schema_type(SCHEMA["properties"]["tags"], root=False).text() == "list(string)"
    assert schema_type(SCHEMA["properties"]["labels"], root=False).text() == "map(string, string)"
    assert schema_type(SCHEMA["properties"]["port"], root=False).text() == "dyn"
    assert schema_type(SCHEMA["properties"]["since"], root=False).text() == "google.protobuf.Timestamp"
    assert schema_type(SCHEMA["properties"]["data"], root=False).text() == "bytes"
    assert schema_type({"type": "number"}, root=False).text() == "double"


def test_an_expression_the_parser_cannot_read_gets_no_error() -> None:
    assert parse("a.b(") is None
    assert check("a.b(", {}) == (schema_type(None, root=False), [])


@pytest.mark.parametrize(("source", "returns", "error"), [
    ("114 + '514'", (), "compilation failed: " + excerpt(
        1, 5, "found no matching overload for '_+_' applied to '(int, string)'", "114 + '514'")),
    ("'a'", ("bool",), "must evaluate to bool"),
    ("size(object.spec.x)", ("bool",), "must evaluate to bool"),
    ("1", ("string",), "must evaluate to string"),
    ("object.metadata.name == 'a'", ("string", "null_type"), "must evaluate to one of [string null_type]"),
    ("object.spec.x", ("bool",), ""),  # dyn: upstream refuses it, kubeloop cannot tell
    ("'a' + object.metadata.name", ("string", "null_type"), ""),
    ("null", ("string", "null_type"), ""),
    ("[1, 2]", (), ""),
])
def test_policy_expressions_are_typed_with_their_return_types(source: str, returns: tuple[str, ...],
                                                             error: str) -> None:
    _, found = compile_policy_expression(source, has_params=False, has_authorizer=True, variables=None,
                                         returns=returns)
    assert found == error


def test_a_webhook_match_condition_must_be_a_bool() -> None:
    assert condition_error("object.metadata.name") == ""
    assert condition_error("'yes'") == "must evaluate to bool"
    assert condition_error("request.name + 1 == 2") == ""  # request is dyn here
    assert condition_error("1 + 'a' == 'b'").startswith(
        "compilation failed: ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'")


# -- no false errors: every rule in the suite's CRDs still compiles ---------------------------------------

_TYPE_ERRORS = ("found no matching overload", "must evaluate to", "does not support field selection",
                "cannot be range of a comprehension")
_TESTS = Path(__file__).resolve().parents[1]
_OWN = {"test_cel_type_check.py", "test_crd_cel_type_check.py"}


def _literal_schemas() -> list[tuple[str, dict[str, Any]]]:
    """Every literal schema in the test suite that holds ``x-kubernetes-validations`` (the top-most such
    dict of each literal), with the file it comes from."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(_TESTS.rglob("*.py")):
        if path.name in _OWN:
            continue
        text = path.read_text()
        if "x-kubernetes-validations" not in text:
            continue
        taken: list[tuple[int, int]] = []
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Dict) or any(a <= node.lineno <= b for a, b in taken):
                continue
            try:
                value = ast.literal_eval(node)
            except ValueError:
                continue
            if "x-kubernetes-validations" in repr(value) and isinstance(value, dict) and (
                    "properties" in value or "type" in value):
                found.append((f"{path.name}:{node.lineno}", value))
                taken.append((node.lineno, node.end_lineno or node.lineno))
    return found


def test_the_suites_literal_crd_schemas_get_no_type_error() -> None:
    schemas = _literal_schemas()
    assert len(schemas) >= 3  # test_crd_cel_rules' SCHEMA, the e2e CRD's, ...
    for where, schema in schemas:
        errors = validate_schema_rules(schema, "openAPIV3Schema")
        assert not [e for e in errors if any(t in str(e.detail) for t in _TYPE_ERRORS)], (where, errors)
