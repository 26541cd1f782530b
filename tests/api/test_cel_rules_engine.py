"""The CEL engine behind CRD rules: CEL's own semantics, the Kubernetes libraries, ``self`` typing and
escaping, as upstream evaluates them.

Sources: cel-spec (int/uint kept apart, overflow and division errors, macros), cel-go ``ext/strings.go``,
k8s.io/apiserver ``pkg/cel/library`` (lists.go, regex.go, urls.go, quantity.go, ip.go, cidr.go),
``pkg/cel/escaping.go`` and ``pkg/cel/common/values.go``; messages from apiextensions-apiserver
``pkg/apiserver/schema/cel/validation.go``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api._cel_compile import compile_rule
from kubeloop.api._cel_validate import RuleValidator
from kubeloop.api._cel_values import escape, go_duration, unescape


def run(rule: str, value: Any, schema: dict[str, Any] | None = None, old: Any = None) -> list[str]:
    """The error texts of ``rule`` on ``value`` under ``schema`` (a property ``v`` of the root)."""
    node = {**(schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
            "x-kubernetes-validations": [{"rule": rule}]}
    _, rule_error, _ = compile_rule(node["x-kubernetes-validations"][0], node, root=False)
    assert rule_error is None, rule_error  # the type checker refuses no rule of these tests (_cel_check)
    validator = RuleValidator({"type": "object", "properties": {"v": node}})
    warnings: list[str] = []
    errors = validator.validate({"v": value}, None if old is None else {"v": old}, warnings)
    return [str(e) for e in errors]


def passes(rule: str, value: Any = None, schema: dict[str, Any] | None = None) -> bool:
    errors = run(rule, {} if value is None else value, schema)
    assert all("failed rule" in e for e in errors), errors
    return not errors


@pytest.mark.parametrize("rule", [
    "1 + 2 == 3", "3 / 2 == 1", "-7 % 3 == -1", "3.0 / 2.0 == 1.5", "1u + 2u == 3u", "dyn(1) == 1.0",
    "[1, 2, 3].all(i, i > 0)", "[1, 2, 3].exists(i, i == 2)", "[1, 2, 3].exists_one(i, i > 2)",
    "[1, 2, 3].map(i, i * 2) == [2, 4, 6]", "[1, 2, 3].filter(i, i > 1) == [2, 3]",
    "{'a': 1}.all(k, k == 'a')", "has({'a': 1}.a) && !has({'a': 1}.b)", "size(b'ab') == 2",
    "timestamp('2024-01-01T00:00:00Z') + duration('1h') == timestamp('2024-01-01T01:00:00Z')",
    "duration('1h30m').getMinutes() == 90", "'abc'.matches('^a') && 'abc'.contains('b')",
    "true || 1 / 0 == 1", "int('12') + 1 == 13", "type(1) == int",
])
def test_cel_basics(rule: str) -> None:
    assert passes(rule)


@pytest.mark.parametrize(("rule", "error"), [
    ("9223372036854775807 + 1 > 0", "integer overflow evaluating rule: 9223372036854775807 + 1 > 0"),
    ("1 / 0 == 0", "division by zero evaluating rule: 1 / 0 == 0"),
    # dyn(1): `1 + 1u` itself no longer compiles (cel-go's checker: no matching overload for '_+_')
    ("dyn(1) + 1u == 2u", "'no such overload': call arguments did not match a supported operator, function or "
                         "macro signature for rule: dyn(1) + 1u == 2u"),
    ("self.nope == 1", "no such key: nope evaluating rule: self.nope == 1"),
    ("[1][3] == 1", "evaluating rule: [1][3] == 1"),
])
def test_runtime_errors_are_worded_as_upstream(rule: str, error: str) -> None:
    [text] = run(rule, {})
    assert text.startswith('v: Invalid value: "object": ') and text.endswith(error)


@pytest.mark.parametrize("rule", [
    "'Hello'.lowerAscii() == 'hello' && 'Hello'.upperAscii() == 'HELLO'",
    "'  x \\t'.trim() == 'x'", "'a,b,c'.split(',') == ['a', 'b', 'c']", "'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "'hello'.substring(1, 3) == 'el' && 'hello'.substring(3) == 'lo'", "'hello'.charAt(1) == 'e'",
    "'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'hello'.indexOf('z') == -1",
    "'aaa'.replace('a', 'b', 2) == 'bba'", "['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab'",
    "'abc'.reverse() == 'cba'", "'%s is %d, %.2f'.format(['x', 3, 1.5]) == 'x is 3, 1.50'",
    "[1, 2, 3].isSorted() && ![2, 1].isSorted()", "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0",
    "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3", "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2",
    "'abc 123 def 456'.find('[0-9]+') == '123' && 'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']",
    "'x'.findAll('[0-9]+') == [] && 'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']",
    "url('https://user@example.com:8443/a/b?x=1&x=2').getHost() == 'example.com:8443'",
    "url('https://example.com:8443/a/b').getHostname() == 'example.com' && url('https://e.com:80/').getPort() == '80'",
    "url('https://example.com/a/b?x=1&x=2').getQuery()['x'] == ['1', '2']",
    "url('https://[::1]:80/p').getHostname() == '::1' && url('https://e.com/a%20b').getEscapedPath() == '/a%20b'",
    "isURL('https://example.com') && !isURL('not a url')",
    "quantity('1Gi') == quantity('1024Mi') && quantity('500m').isLessThan(quantity('1'))",
    "quantity('1.5').compareTo(quantity('1500m')) == 0 && quantity('2k').asInteger() == 2000",
    "quantity('1').add(quantity('500m')) == quantity('1.5') && quantity('1').sub(1).sign() == 0",
    "isQuantity('10Mi') && !isQuantity('ten') && quantity('250m').asApproximateFloat() == 0.25",
    "!quantity('1.5').isInteger() && quantity('-1').sign() == -1",
    "isIP('10.0.0.1') && !isIP('10.0.0.256') && ip('10.0.0.1').family() == 4 && ip('::1').isLoopback()",
    "ip('fe80::1').isLinkLocalUnicast() && ip('8.8.8.8').isGlobalUnicast() && ip('0.0.0.0').isUnspecified()",
    "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
    "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
    "cidr('10.1.2.3/8').ip() == ip('10.1.2.3') && cidr('10.0.0.0/8').prefixLength() == 8 && isCIDR('::/0')",
    "ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1') && string(ip('::1')) == '::1'",
    "string(cidr('10.0.0.0/8')) == '10.0.0.0/8' && string(1) == '1' && string(url('https://e.com')) == 'https://e.com'",
])
def test_kubernetes_libraries(rule: str) -> None:
    assert passes(rule)


def test_library_errors_carry_upstreams_words() -> None:
    [text] = run("'abc'.substring(2, 9) == 'c'", {})
    assert text.endswith("index out of range: 9 evaluating rule: 'abc'.substring(2, 9) == 'c'")
    [text] = run("[].min() == 0", {})
    assert text.endswith("min called on empty list evaluating rule: [].min() == 0")
    [text] = run("quantity('ten').sign() == 1", {})
    assert "quantities must match the regular expression" in text


SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "namespace": {"type": "string"},
        "foo-bar": {"type": "string"},
        "a.b": {"type": "string"},
        "x__y": {"type": "string"},
        "ratio": {"type": "number"},
        "data": {"type": "string", "format": "byte"},
        "timeout": {"type": "string", "format": "duration"},
        "at": {"type": "string", "format": "date-time"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": True},
        "maybe": {"type": "string", "nullable": True},
    },
}


def test_escaping_follows_upstream() -> None:
    assert escape("namespace") == "__namespace__" and escape("foo-bar") == "foo__dash__bar"
    assert escape("a.b") == "a__dot__b" and escape("x__y") == "x__underscores__y" and escape("a/b") == "a__slash__b"
    assert escape("1abc") is None and escape("a b") is None and escape("ok_name") == "ok_name"
    assert unescape("__namespace__") == "namespace" and unescape("foo__dash__bar") == "foo-bar"


def test_self_is_typed_by_the_schema() -> None:
    value = {"namespace": "ns", "foo-bar": "fb", "a.b": "ab", "x__y": "xy", "ratio": 1, "data": "aGk=",
             "timeout": "1m30s", "at": "2024-05-01T10:00:00Z", "labels": {"app.kubernetes.io/name": "web"},
             "port": 8080, "maybe": None}
    rules = [
        "self.__namespace__ == 'ns' && self.foo__dash__bar == 'fb' && self.a__dot__b == 'ab'",
        "self.x__underscores__y == 'xy'",
        "self.ratio == 1.0 && type(self.ratio) == double",  # type: number is a double, even as 1
        "self.data == b'hi'", "self.timeout == duration('90s')",
        "self.at == timestamp('2024-05-01T10:00:00Z')",
        "self.labels['app.kubernetes.io/name'] == 'web' && 'app.kubernetes.io/name' in self.labels",
        "self.port == 8080", "!has(self.maybe)",  # null is absent
    ]
    for rule in rules:
        assert run(rule, value, SPEC) == [], rule


def test_the_root_sees_only_name_and_generate_name_of_its_metadata() -> None:
    validator = RuleValidator({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name == 'a' && self.kind == 'W' && self.apiVersion == 'x/v1'"},
        {"rule": "!has(self.metadata.generateName) && self.metadata.size() == 1"}]})
    obj = {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a", "namespace": "n", "labels": {"k": "v"}}}
    assert validator.validate(obj, None, []) == []


def test_go_durations() -> None:
    assert go_duration("1h30m") is not None and go_duration("1h30m").total_seconds() == 5400  # type: ignore[union-attr]
    assert go_duration("-1.5s").total_seconds() == -1.5  # type: ignore[union-attr]
    assert go_duration("0") is not None and go_duration("1x") is None and go_duration("") is None


def test_a_rule_on_a_null_value_is_not_run() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "nullable": True,
                                                     "x-kubernetes-validations": [{"rule": "self.size() > 3"}]}}}
    assert RuleValidator(schema).validate({"v": None}, None, []) == []
    assert [str(e) for e in RuleValidator(schema).validate({"v": "ab"}, None, [])] == [
        'v: Invalid value: "string": failed rule: self.size() > 3']


def test_null_list_items_keep_their_index() -> None:
    schema = {"type": "array", "items": {"type": "string", "nullable": True}}
    assert run("self.size() == 3 && self[2] == 'c' && self[1] == null", ["a", None, "c"], schema) == []


@pytest.mark.parametrize("rule", [
    "sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2]) && 'abc'.contains('b')",
    "sets.equivalent([1, 2], [2, 1, 1]) && sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])",
    "!format.dns1123Label().validate('web-1').hasValue() && format.dns1123Label().validate('Web_1').hasValue()",
    "format.named('uuid').value().validate('not-a-uuid').hasValue() && !format.named('nope').hasValue()",
    "!format.labelValue().validate('ok').hasValue() && format.labelValue().validate('-bad').hasValue()",
    "format.qualifiedName().validate('example.com/name') == optional.none()",
])
def test_sets_and_format_libraries(rule: str) -> None:
    assert passes(rule)


def test_format_validate_returns_upstreams_messages() -> None:
    schema = {"type": "string", "x-kubernetes-validations": [
        {"rule": "!format.dns1123Label().validate(self).hasValue()",
         "messageExpression": "format.dns1123Label().validate(self).value().join(', ')"}]}
    errors = RuleValidator({"type": "object", "properties": {"v": schema}}).validate({"v": "Bad_Name"}, None, [])
    assert [str(e) for e in errors] == [
        "v: Invalid value: \"string\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
        "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
        "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]


def test_a_schema_has_rules_only_where_a_non_empty_rule_list_stands() -> None:
    # What decides whether CEL is loaded at all (tests/cli/test_startup_imports.py holds start-up free of it).
    from kubeloop.api._cel_presence import has_validation_rules

    assert not has_validation_rules({"type": "object", "properties": {"a": {"type": "string"}}})
    assert has_validation_rules({"properties": {"a": {"items": {"x-kubernetes-validations": [{"rule": "true"}]}}}})
    assert has_validation_rules({"allOf": [{"additionalProperties": {"x-kubernetes-validations": [{"rule": "1"}]}}]})
    assert not has_validation_rules({"x-kubernetes-validations": []})
