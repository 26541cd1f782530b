"""The decode walk's answers that replace work of its own elsewhere on the create path.

- A create's managedFields entry built by the walk (:attr:`kubeloop.api._go_decode.Decoded.owned`, under
  :func:`kubeloop.api._apply.flat_create_plan`) is, byte for byte, the one the field manager's own walk
  (:func:`kubeloop.api._fieldpath.created_tree`) builds from the object the hook sees, for every body the
  walk answers; and the walk answers for every flat body (scalars, maps of strings, and metadata holding
  those), so the fast path is the one creates take.
- A body the walk finds without a null (:attr:`Decoded.nulls` false) is one the typed decode's null
  replacement (:func:`kubeloop.server._defaults.drop_go_nulls`) leaves as it is: the byte scan for
  ``null`` it replaced could be skipped.
- The walk answers for a body with nulls only where the null changes nothing the entry owns, once the typed
  decode's null replacement has run (as it does before the hook): directly under metadata (client-go's
  ``creationTimestamp: null`` with every create; Go decodes a null into the field's zero, omitted or stripped)
  and at the kind's own top-level fields whose zero Go omits. Until request path round 14 the walk gave up at
  any null; the invariant "an entry only for a body without nulls" is relaxed to exactly those places.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import builtin_schema
from kubeloop.api._apply import _CREATE_TREES, flat_create_plan
from kubeloop.api._fieldpath import created_tree
from kubeloop.api._go_decode import decode, go_struct
from kubeloop.api._go_encode import go_encoding
from kubeloop.api._kinds import BUILTIN_RESOURCES
from kubeloop.api._schemas import definition_name_for
from kubeloop.server._defaults import create_keeps_decoded_body, drop_go_nulls

KINDS = {info.kind: info for info in BUILTIN_RESOURCES if info.group == "" and info.version == "v1"}
FLAT_KINDS = ("ConfigMap", "ServiceAccount")

# Keys: plain, unicode, and the characters FieldsV1 and JSON treat specially.
_KEYS = st.one_of(st.sampled_from(["a", "b", "app.kubernetes.io/name", "k", "é", "日本", "f:x", ".", "a\"b", ""]),
                  st.text(max_size=4))
_STRINGS = st.text(max_size=5)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**40), max_value=2**40) | _STRINGS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_KEYS, inner, max_size=2),
    max_leaves=4,
)
# Mostly strings; now and then a null, a number or a map a string field cannot hold.
_VALUES = st.one_of(_STRINGS, _STRINGS, _STRINGS, st.none(), st.integers(0, 3), st.just({"x": "y"}))
_STRING_MAPS = st.dictionaries(_KEYS, _STRINGS, max_size=4)


# The nulls the walk passes by (it answers for a flat body holding them): any ObjectMeta field's (a Go zero
# the encoding omits, or a server's field no entry holds), and the kind's own top-level fields Go omits at zero.
_META_NULLS = ("creationTimestamp", "namespace", "generateName", "labels", "annotations", "uid", "resourceVersion",
               "generation", "finalizers", "ownerReferences", "managedFields", "deletionTimestamp",
               "deletionGracePeriodSeconds", "selfLink", "name")
_TOP_NULLS = {"ConfigMap": ("data", "binaryData", "immutable"),
              "ServiceAccount": ("automountServiceAccountToken", "secrets", "imagePullSecrets")}
# client-go's null is the usual one: drawn more often than the others.
_CLIENT_GO = st.one_of(st.just("creationTimestamp"), st.sampled_from(_META_NULLS))


def _meta(flat: bool) -> st.SearchStrategy[dict[str, Any]]:
    maps = _STRING_MAPS.filter(bool) if flat else st.one_of(st.dictionaries(_KEYS, _VALUES, max_size=3), st.none(), _JSON)
    optional: dict[str, st.SearchStrategy[Any]] = {
        # An empty string or a 0 in ObjectMeta is a value scalar at its zero, dropped by the decode: not flat.
        "namespace": st.sampled_from(["default", "other"] if flat else ["default", "other", ""]),
        "generateName": st.sampled_from(["g-"] if flat else ["g-", ""]),
        "labels": maps, "annotations": maps, "uid": st.just("u"), "resourceVersion": st.just("5"),
        "generation": st.integers(1 if flat else 0, 3),
    }
    if not flat:
        optional.update({
            "finalizers": st.lists(st.one_of(_STRINGS, st.none()), max_size=2),
            "ownerReferences": st.just([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}]),
            "managedFields": st.just([{"manager": "m", "operation": "Update", "apiVersion": "v1",
                                       "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]),
            "bogus": _JSON, "creationTimestamp": st.one_of(st.none(), st.just("2024-01-01T00:00:00Z")),
        })
    name = st.sampled_from(["a", "b-1"])
    return st.fixed_dictionaries({"name": name if flat else st.one_of(name, name, _JSON)}, optional=optional)


@st.composite
def _bodies(draw: st.DrawFn, flat: bool) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(FLAT_KINDS))
    data = _STRING_MAPS.filter(bool) if flat else st.one_of(st.dictionaries(_KEYS, _VALUES, max_size=3), _JSON)
    optional: dict[str, st.SearchStrategy[Any]]
    if kind == "ConfigMap":
        optional = {"data": data, "immutable": st.booleans() if flat else st.one_of(st.booleans(), _JSON)}
        if not flat:
            optional["binaryData"] = st.one_of(st.just({"b": "AAAA"}), _JSON)
    else:
        optional = {"automountServiceAccountToken": st.booleans() if flat else _JSON}
        if not flat:
            optional.update({"secrets": st.one_of(st.just([{"name": "s"}]), _JSON),
                             "imagePullSecrets": st.one_of(st.just([{"name": "p"}]), st.just([]), _JSON)})
    api_version = st.just("v1")
    if not flat:
        optional["bogus"] = _JSON
        api_version = st.one_of(api_version, api_version, st.none(), st.integers(-5, 5))
    body = draw(st.fixed_dictionaries({"apiVersion": api_version, "kind": st.just(kind), "metadata": _meta(flat)},
                                      optional=optional))
    order = draw(st.permutations(list(body)))  # the body's key order is the client's
    return kind, {key: body[key] for key in order}


def _walked(kind: str, body: dict[str, Any]) -> Any:
    info = KINDS[kind]
    assert create_keeps_decoded_body(info)
    schema = builtin_schema("", "v1", kind)
    defname = definition_name_for("", "v1", kind)
    assert defname is not None
    plan = flat_create_plan(schema, info.status_subresource, go_encoding(defname))  # as the server builds it
    assert plan is not None
    return decode(body, go_struct(defname), plan)


def _hooks_tree(kind: str, body: dict[str, Any]) -> Any:
    """What the field manager's hook builds for ``body`` after the create path's steps before it
    (the typed decode's nulls replaced, check_body sets apiVersion and kind, _check_namespace the namespace:
    none of them owned)."""
    seen = copy.deepcopy(body)
    drop_go_nulls(KINDS[kind], seen)
    seen["apiVersion"], seen["kind"] = "v1", kind
    if not isinstance(seen.get("metadata"), dict):
        seen["metadata"] = {}
    seen["metadata"].setdefault("namespace", "default")
    return created_tree(seen, builtin_schema("", "v1", kind), _CREATE_TREES[KINDS[kind].status_subresource])


@settings(max_examples=400, deadline=None)
@given(_bodies(flat=False))
def test_the_walks_entry_is_the_field_managers_wherever_the_walk_answers(case: tuple[str, dict[str, Any]]) -> None:
    kind, body = case
    walked = copy.deepcopy(body)
    decoded = _walked(kind, walked)
    assert walked == body, "the walk changes nothing"
    if decoded.owned is not None:
        assert decoded.error is None and not decoded.unknown and not decoded.empties
        assert set(_null_paths(body)) <= _harmless(kind), "an entry despite a null the hook would see"
        assert orjson.dumps(decoded.owned) == orjson.dumps(_hooks_tree(kind, body))


def _null_paths(value: Any, path: str = "") -> list[str]:
    """Where ``value`` holds a null: dotted field paths, ``[]`` for a list item."""
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _null_paths(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [p for item in value for p in _null_paths(item, path + "[]")]
    return []


def _harmless(kind: str) -> set[str]:
    return {f"metadata.{key}" for key in _META_NULLS} | set(_TOP_NULLS[kind])


@st.composite
def _flat_with_nulls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A flat body as client-go and kubectl send it: ``creationTimestamp: null`` (mostly), and now and then
    more nulls where the walk passes them by."""
    kind, body = draw(_bodies(flat=True))
    for key in draw(st.lists(_CLIENT_GO, min_size=1, max_size=3)):
        body["metadata"][key] = None
    for key in draw(st.lists(st.sampled_from(_TOP_NULLS[kind]), max_size=2)):
        body[key] = None
    return kind, body


@settings(max_examples=300, deadline=None)
@given(st.one_of(_bodies(flat=True), _flat_with_nulls()))
def test_the_walk_answers_for_every_flat_body(case: tuple[str, dict[str, Any]]) -> None:
    kind, body = case
    decoded = _walked(kind, copy.deepcopy(body))
    assert decoded.owned is not None
    assert orjson.dumps(decoded.owned) == orjson.dumps(_hooks_tree(kind, body))


@pytest.mark.parametrize(("kind", "body"), [
    # kubectl create configmap c --from-literal=a=1 (kubectl 1.32 sends exactly this)
    ("ConfigMap", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "creationTimestamp": None},
                   "data": {"a": "1"}}),
    # kubectl create serviceaccount s
    ("ServiceAccount", {"kind": "ServiceAccount", "apiVersion": "v1",
                        "metadata": {"name": "s", "creationTimestamp": None}}),
    # client-go's Create of a ConfigMap with its namespace set
    ("ConfigMap", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "c", "namespace": "default", "creationTimestamp": None, "labels": {"app": "x"}}, "data": {"k": "v"}}),
])
def test_the_walk_answers_for_what_kubectl_and_client_go_send(kind: str, body: dict[str, Any]) -> None:
    decoded = _walked(kind, copy.deepcopy(body))
    assert decoded.owned is not None
    assert orjson.dumps(decoded.owned) == orjson.dumps(_hooks_tree(kind, body))
    # A zero metav1.Time encodes as null again: the replacement has nothing to do, and is skipped.
    assert not decoded.nulls
    replaced = copy.deepcopy(body)
    drop_go_nulls(KINDS[kind], replaced)
    assert replaced == body




@settings(max_examples=400, deadline=None)
@given(st.sampled_from(FLAT_KINDS).flatmap(lambda kind: st.tuples(st.just(kind), _bodies(flat=True))), st.data())
def test_a_null_anywhere_else_gives_the_general_paths_entry_or_none(
        case: tuple[str, tuple[str, dict[str, Any]]], data: st.DataObject) -> None:
    """Nulls put at any depth of a flat body (map values, list items, metadata's maps, the root's type fields):
    the walk either gives up or gives the entry the hook builds after the nulls are replaced."""
    _, (kind, body) = case
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        targets = _dicts_and_lists(body, [])
        target = targets[data.draw(st.integers(min_value=0, max_value=len(targets) - 1))]
        if isinstance(target, dict):
            target[data.draw(st.sampled_from([*sorted(target), "apiVersion", "kind", "x", "é"]))] = None
        elif target:
            target[data.draw(st.integers(min_value=0, max_value=len(target) - 1))] = None
    decoded = _walked(kind, copy.deepcopy(body))
    if decoded.owned is None:
        return
    assert set(_null_paths(body)) <= _harmless(kind)
    assert orjson.dumps(decoded.owned) == orjson.dumps(_hooks_tree(kind, body))


def test_labels_and_data_are_owned_key_by_key_and_the_servers_fields_not_at_all() -> None:
    # What kube-apiserver 1.32 records for `kubectl create -f` of such a ConfigMap (fieldmanager over
    # sigs.k8s.io/structured-merge-diff: "." marks a map that is itself a member; name, namespace, apiVersion
    # and kind are stripped, apimachinery managedfields/internal/stripmeta.go).
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "2", "a": "1"},
            "metadata": {"name": "x", "namespace": "default", "labels": {"app": "x"}}}
    decoded = _walked("ConfigMap", body)
    assert orjson.dumps(decoded.owned) == orjson.dumps(
        {"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})


def test_a_body_the_walk_does_not_answer_for_has_no_entry_from_it() -> None:
    for body in (
        {"metadata": {"name": "x", "finalizers": ["f"]}, "data": {"a": "1"}},  # a list: the general path
        {"metadata": {"name": "x"}, "data": {}},  # an empty map: taken out before the hook
        {"metadata": {"name": "x"}, "data": {"a": None}},  # a null in a map: replaced before the hook
        {"metadata": {"name": "x", "labels": {"a": None}}, "data": {"a": "1"}},  # the same in metadata
        {"metadata": {"name": "x", "finalizers": [None]}, "data": {"a": "1"}},  # a null list item
        {"apiVersion": None, "metadata": {"name": "x"}, "data": {"a": "1"}},  # read before the decode
        {"metadata": None, "data": {"a": "1"}},  # metadata itself
        {"metadata": {"name": "x"}, "data": {"a": "1"}, "bogus": 1},  # an unknown field: dropped before it
        {"metadata": {"name": "x"}, "binaryData": {"b": "AAAA"}},  # a map of bytes: not settled by the walk
        {"metadata": {"name": "x", "generateName": ""}, "data": {"a": "1"}},  # a value zero: dropped before it
    ):
        assert _walked("ConfigMap", body).owned is None, body


# -- nulls -------------------------------------------------------------------------------------------------

_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}],
                             "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80}]}],
             "nodeSelector": {"d": "s"}, "tolerations": [{"key": "k", "operator": "Exists"}]},
}


def _dicts_and_lists(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, (dict, list)):
        out.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            _dicts_and_lists(item, out)
    return out


@st.composite
def _with_nulls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(["Pod", "ConfigMap", "ServiceAccount"]))
    # A copy either way: the strategies' ``just`` values are shared between examples.
    body = copy.deepcopy(_POD if kind == "Pod" else draw(_bodies(flat=False))[1])
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        targets = _dicts_and_lists(body, [])
        target = targets[draw(st.integers(min_value=0, max_value=len(targets) - 1))]
        value = draw(st.one_of(st.none(), _JSON))
        if isinstance(target, dict):
            target[draw(st.sampled_from([*sorted(target), "x"]))] = value
        elif target:
            target[draw(st.integers(min_value=0, max_value=len(target) - 1))] = value
    return kind, body


@settings(max_examples=400, deadline=None)
@given(_with_nulls())
def test_a_body_the_walk_finds_without_nulls_is_one_the_null_replacement_leaves_alone(
        case: tuple[str, dict[str, Any]]) -> None:
    kind, body = case
    defname = definition_name_for("", "v1", kind)
    assert defname is not None
    walked = copy.deepcopy(body)
    decoded = decode(walked, go_struct(defname))
    if decoded.error is not None:
        return  # a 400 before anything is replaced
    decoded.drop_unknown()
    if not decoded.nulls:
        replaced = copy.deepcopy(walked)
        drop_go_nulls(KINDS[kind], replaced)
        assert replaced == walked


@pytest.mark.parametrize("body", [
    {"metadata": {"name": "x", "labels": {"a": None}}},
    {"metadata": {"name": "x", "namespace": None}},
    {"metadata": {"name": "x", "finalizers": [None]}},
    {"apiVersion": None, "metadata": {"name": "x"}},
    {"metadata": {"name": "x"}, "data": {"a": None}},
])
def test_the_walk_reports_every_null_it_passes(body: dict[str, Any]) -> None:
    defname = definition_name_for("", "v1", "ConfigMap")
    assert defname is not None
    assert decode(body, go_struct(defname)).nulls


def test_a_managed_fields_entrys_fields_v1_holds_no_null_to_replace() -> None:
    # What client-go's Update and kubectl replace send back: the managedFields they read. A FieldsV1 keeps its
    # bytes as sent (apimachinery FieldsV1.UnmarshalJSON), nulls included, and the replacement leaves it alone.
    defname = definition_name_for("", "v1", "ConfigMap")
    assert defname is not None
    entry = {"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": None}}}
    body = {"metadata": {"name": "x", "managedFields": [entry]}, "data": {"a": "1"}}
    assert not decode(copy.deepcopy(body), go_struct(defname)).nulls
    replaced = copy.deepcopy(body)
    drop_go_nulls(KINDS["ConfigMap"], replaced)
    assert replaced == body
    body["metadata"]["managedFields"][0]["time"] = None  # a null at the entry's own field is one to replace
    assert decode(copy.deepcopy(body), go_struct(defname)).nulls


def test_a_value_the_walk_does_not_look_into_may_hold_a_null() -> None:
    defname = definition_name_for("", "v1", "Pod")
    assert defname is not None
    limits = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}}
    assert decode(limits, go_struct(defname)).nulls  # a map of quantities
    plain = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert not decode(plain, go_struct(defname)).nulls


@settings(max_examples=300, deadline=None)
@given(st.one_of(_flat_with_nulls(), _with_nulls()))
def test_a_body_the_walk_finds_without_nulls_to_replace_under_a_plan_is_one_the_replacement_leaves_alone(
        case: tuple[str, dict[str, Any]]) -> None:
    kind, body = case
    if kind not in FLAT_KINDS:
        return
    walked = copy.deepcopy(body)
    decoded = _walked(kind, walked)
    if decoded.error is not None:
        return  # a 400 before anything is replaced
    decoded.drop_unknown()
    decoded.drop_zeros()
    if not decoded.nulls:
        replaced = copy.deepcopy(walked)
        drop_go_nulls(KINDS[kind], replaced)
        assert replaced == walked
    if decoded.owned is not None and _null_paths(body):
        assert decoded.nulls == any(p != "metadata.creationTimestamp" for p in _null_paths(body))
