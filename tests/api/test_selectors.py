"""Label and field selectors behave like apimachinery pkg/labels and pkg/fields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeloop.api import (
    BadRequest,
    FieldSelector,
    LabelRequirement,
    LabelSelector,
    check_field_selector,
    escape_field_value,
    field_value,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
    requires_exact_name,
)

# --- label selector syntax ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app=web", {}, False),
        ("app==web", {"app": "web"}, True),
        ("app!=web", {"app": "db"}, True),
        ("app!=web", {}, True),  # a missing key is "not equal"
        ("app!=web", {"app": "web"}, False),
        ("tier in (a,b)", {"tier": "b"}, True),
        ("tier in (a,b)", {"tier": "c"}, False),
        ("tier in (a,b)", {}, False),
        ("tier notin (a,b)", {"tier": "c"}, True),
        ("tier notin (a,b)", {}, True),
        ("tier notin (a,b)", {"tier": "a"}, False),
        ("app", {"app": ""}, True),
        ("app", {"other": "x"}, False),
        ("!app", {"other": "x"}, True),
        ("!app", {"app": "x"}, False),
        ("replicas>2", {"replicas": "3"}, True),
        ("replicas>2", {"replicas": "2"}, False),
        ("replicas<2", {"replicas": "1"}, True),
        ("replicas<2", {"replicas": "x"}, False),
        ("a=1,b=2", {"a": "1", "b": "2"}, True),
        ("a=1,b=2", {"a": "1", "b": "3"}, False),
        ("a=", {"a": ""}, True),
        ("a=", {}, False),
    ],
)
def test_label_selector_matches_like_upstream(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_whitespace_between_tokens_is_ignored() -> None:
    assert parse_label_selector("  a = b ,  c in ( x , y ) , ! d ") == parse_label_selector("a=b,c in (x,y),!d")


def test_in_and_notin_are_ordinary_words_where_a_key_or_value_is_expected() -> None:
    sel = parse_label_selector("in in (notin,in)")
    assert sel.matches({"in": "notin"})
    assert str(sel) == "in in (in,notin)"


def test_empty_values_in_a_set_are_allowed_as_upstream() -> None:
    # selector.go Parse doc example: "x in (foo,,baz),y,z notin ()"
    sel = parse_label_selector("x in (foo,,baz),y,z notin ()")
    assert sel.requirements[0] == LabelRequirement("x", "in", ("", "baz", "foo"))
    assert sel.matches({"x": "", "y": "1"})
    assert not sel.matches({"x": "foo", "y": "1", "z": ""})


def test_canonical_string_sorts_requirements_by_key_and_values() -> None:
    sel = parse_label_selector("z=1,a in (c,b,a),m")
    assert str(sel) == "a in (a,b,c),m,z=1"


def test_empty_and_missing_selector_strings_match_everything() -> None:
    for text in ("", None, "   "):
        sel = parse_label_selector(text)
        assert sel.empty
        assert sel.matches({}) and sel.matches({"a": "b"})
        assert str(sel) == ""


def test_matches_accepts_none_as_no_labels() -> None:
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": "
                "for 'Gt', 'Lt' operators, the value must be an integer"),
    ],
)
def test_malformed_label_selectors_are_bad_requests_with_upstream_text(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector(text)
    assert info.value.message == message
    assert info.value.status_code == 400


def test_invalid_key_is_reported_with_upstreams_nil_field_path() -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector("-a=b")
    assert info.value.message.startswith('unable to parse requirement: <nil>: Invalid value: "-a": name part must consist')


def test_invalid_value_is_reported_at_values_index_and_key() -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector("k=" + "v" * 64)
    assert info.value.message == (
        f'unable to parse requirement: values[0][k]: Invalid value: "{"v" * 64}": must be no more than 63 characters'
    )


def test_prefixed_keys_are_accepted() -> None:
    sel = parse_label_selector("app.kubernetes.io/name=web")
    assert sel.matches({"app.kubernetes.io/name": "web"})


def test_requires_exact_match_reports_the_pinned_value() -> None:
    assert parse_label_selector("a=1,b in (2)").requires_exact_match("b") == "2"
    assert parse_label_selector("a in (1,2)").requires_exact_match("a") is None
    assert parse_label_selector("a!=1").requires_exact_match("a") is None
    assert parse_label_selector("a=1").requires_exact_match("z") is None


# --- LabelSelector objects (metav1.LabelSelectorAsSelector) ------------------------------------


def test_nil_label_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert not label_selector_from_dict(None).matches({})
    assert not label_selector_from_dict(None).matches({"a": "b"})
    assert label_selector_from_dict({}).matches({})
    assert label_selector_from_dict({"matchLabels": {}, "matchExpressions": []}).matches({"x": "y"})


def test_label_selector_dict_combines_match_labels_and_expressions() -> None:
    sel = label_selector_from_dict({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    })
    assert str(sel) == "app=web,env notin (prod),!legacy,team,tier in (be,fe)"
    assert sel.matches({"app": "web", "tier": "fe", "team": "x"})
    assert not sel.matches({"app": "web", "tier": "fe", "team": "x", "legacy": "1"})
    assert not sel.matches({"app": "web", "tier": "fe", "team": "x", "env": "prod"})
    assert not sel.matches({"app": "web", "tier": "fe"})


def test_label_selector_dict_with_unknown_operator_is_rejected() -> None:
    with pytest.raises(BadRequest, match='"Equals" is not a valid label selector operator'):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]})


def test_label_selector_dict_with_in_and_no_values_is_rejected() -> None:
    with pytest.raises(BadRequest, match="for 'in', 'notin' operators, values set can't be empty"):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


def test_label_selector_dict_with_invalid_key_names_the_key_field() -> None:
    with pytest.raises(BadRequest) as info:
        label_selector_from_dict({"matchLabels": {"bad key": "x"}})
    assert info.value.message.startswith('key: Invalid value: "bad key": name part must consist')


def test_selector_from_labels_matches_supersets() -> None:
    sel = LabelSelector.from_labels({"app": "web", "tier": "fe"})
    assert str(sel) == "app=web,tier=fe"
    assert sel.matches({"app": "web", "tier": "fe", "extra": "1"})
    assert not sel.matches({"app": "web"})
    assert LabelSelector.from_labels({}).matches({})


def test_scale_status_selector_string_is_the_canonical_form() -> None:
    # /scale status.selector is LabelSelectorAsSelector(spec.selector).String()
    sel = label_selector_from_dict({"matchLabels": {"b": "2", "a": "1"}})
    assert str(sel) == "a=1,b=2"


# --- property: parse(str(sel)) == sel ------------------------------------------------------------

_name = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True)
_prefix = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
_key = st.one_of(_name, st.builds(lambda p, n: f"{p}/{n}", _prefix, _name))
_value = st.one_of(st.just(""), _name)
_requirement = st.one_of(
    st.builds(lambda k, op, v: LabelRequirement(k, op, (v,)), _key, st.sampled_from(["=", "==", "!="]), _value),
    st.builds(lambda k, op, vs: LabelRequirement(k, op, tuple(sorted(set(vs)))), _key,
              st.sampled_from(["in", "notin"]), st.lists(_value, min_size=1, max_size=4)),
    st.builds(lambda k, op: LabelRequirement(k, op), _key, st.sampled_from(["exists", "!"])),
    st.builds(lambda k, op, n: LabelRequirement(k, op, (str(n),)), _key, st.sampled_from(["gt", "lt"]),
              st.integers(0, 10**6)),
)


@given(st.lists(_requirement, max_size=5))
def test_label_selector_string_round_trips(reqs: list[LabelRequirement]) -> None:
    sel = LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))
    assert parse_label_selector(str(sel)) == sel


@given(st.lists(_requirement, max_size=5), st.dictionaries(_key, _value, max_size=5))
def test_selector_matches_all_requirements_and_nothing_else(reqs: list[LabelRequirement], labels: dict[str, str]) -> None:
    sel = LabelSelector(tuple(reqs))
    assert sel.matches(labels) == all(r.matches(labels) for r in reqs)


# --- field selectors ---------------------------------------------------------------------------

POD = {
    "metadata": {"name": "web-1", "namespace": "prod"},
    "spec": {"nodeName": "node-a", "hostNetwork": True},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("metadata.name=web-1", True),
        ("metadata.name==web-1", True),
        ("metadata.name!=web-1", False),
        ("metadata.name=web-1,metadata.namespace=prod", True),
        ("metadata.name=web-1,metadata.namespace=dev", False),
        ("spec.nodeName=", False),
        ("spec.nodeName!=", True),
        ("spec.hostNetwork=true", True),
        ("status.podIP=", True),  # a missing field compares as ""
        ("status.phase!=Pending", True),
    ],
)
def test_field_selector_matches_dotted_paths(text: str, expected: bool) -> None:
    assert parse_field_selector(text).matches(POD, kind="Pod") is expected


def test_go_bool_fields_default_to_false_for_their_kinds() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {}}
    assert parse_field_selector("spec.hostNetwork=false").matches(pod, kind="Pod")
    assert parse_field_selector("spec.unschedulable=false").matches({"spec": {}}, kind="Node")
    assert field_value({"spec": {}}, "spec.unschedulable") == ""


def test_event_source_field_is_the_source_component() -> None:
    event = {"source": {"component": "kubelet"}, "involvedObject": {"uid": "u1", "kind": "Pod"}}
    assert parse_field_selector("source=kubelet,involvedObject.uid=u1").matches(event, kind="Event")
    assert field_value({"reportingComponent": "ctrl"}, "source", kind="Event") == "ctrl"


def test_field_values_of_numbers_print_in_decimal() -> None:
    assert field_value({"status": {"replicas": 3}}, "status.replicas") == "3"
    assert field_value({"spec": {"x": {"y": 1}}}, "spec.x") == ""


def test_field_selector_values_may_escape_comma_equals_and_backslash() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert sel.requirements[0].value == "a,b=c\\d"
    assert str(sel) == r"metadata.name=a\,b\=c\\d"
    assert escape_field_value("x,y=z\\") == r"x\,y\=z\\"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=b,cd", "invalid selector: 'a=b,cd'; can't understand 'cd'"),
        (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_malformed_field_selectors_are_bad_requests_with_upstream_text(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(text)
    assert info.value.message == message


def test_empty_terms_are_ignored() -> None:
    assert parse_field_selector("a=b,,") == parse_field_selector("a=b")
    assert parse_field_selector("").matches({})
    assert parse_field_selector("=").empty


@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,5}(\.[a-zA-Z]{1,5}){0,2}", fullmatch=True),
                          st.sampled_from(["=", "!="]), st.text(max_size=8)), max_size=4))
def test_field_selector_string_round_trips(terms: list[tuple[str, str, str]]) -> None:
    text = ",".join(f"{f}{op}{escape_field_value(v)}" for f, op, v in terms)
    sel = parse_field_selector(text)
    assert parse_field_selector(str(sel)) == sel
    assert sorted((r.field, r.operator, r.value) for r in sel.requirements) == sorted(
        t for t in terms if t[0] or t[2])


def test_unsupported_field_on_a_custom_resource_lists_the_meta_fields() -> None:
    with pytest.raises(BadRequest) as info:
        check_field_selector(parse_field_selector("spec.foo=bar"), (), custom=True)
    assert info.value.message == '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'


def test_unsupported_field_on_a_builtin_with_extra_fields_is_not_supported() -> None:
    with pytest.raises(BadRequest) as info:
        check_field_selector(parse_field_selector("spec.foo=bar"), ("spec.nodeName",), custom=False)
    assert info.value.message == "field label not supported: spec.foo"


def test_supported_fields_pass_the_check() -> None:
    sel = parse_field_selector("metadata.name=a,metadata.namespace=b,spec.nodeName=n")
    check_field_selector(sel, ("spec.nodeName",), custom=False)
    check_field_selector(parse_field_selector("metadata.name=a"), (), custom=True)


def test_requires_exact_name_finds_a_metadata_name_equality() -> None:
    assert requires_exact_name("metadata.name=foo,status.phase=Running") == "foo"
    assert requires_exact_name("metadata.name==foo") == "foo"
    assert requires_exact_name("metadata.name!=foo") is None
    assert requires_exact_name("") is None
    assert requires_exact_name(None) is None
    assert requires_exact_name(FieldSelector()) is None


def test_nothing_selectors_match_nothing() -> None:
    assert not FieldSelector.nothing().matches({})
    assert not LabelSelector.nothing().matches({})
    assert not LabelSelector.nothing().empty
