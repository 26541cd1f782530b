"""The typed decode of a built-in body and its unknown fields come from one walk
(:func:`kubeloop.api._go_decode.decode`): its type error is the one the decode gave on its own walk
(the first mismatch in document order, or the error of a type's own UnmarshalJSON, which ends the
decode), and its unknown fields, their paths and the body they leave are those of the schema walk
that custom resources and strategic merge patches still take
(:func:`kubeloop.api._unknown_fields.prune_builtin_unknown_fields`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import _go_decode as g
from kubeloop.api import builtin_schema
from kubeloop.api._go_base64 import base64_error
from kubeloop.api._schemas import definition_name_for
from kubeloop.api._unknown_fields import prune_builtin_unknown_fields
from kubeloop.api._validation import well_typed

_POD_SPEC = {
    "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "1"}], "args": ["a", "b"],
                    "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10}}],
    "nodeSelector": {"disk": "ssd"}, "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    "volumes": [{"name": "v", "configMap": {"name": "cm", "items": [{"key": "a", "path": "a"}]}}],
}
_META = {"name": "x", "namespace": "default", "labels": {"app": "a"}, "annotations": {"note": "n"},
         "finalizers": ["f"], "generation": 2, "creationTimestamp": "2024-01-01T00:00:00Z",
         "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u", "controller": True}]}

SAMPLES: dict[tuple[str, str, str], dict[str, Any]] = {
    ("", "v1", "ConfigMap"): {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _META,
                              "data": {"k": "v"}, "binaryData": {"b": "AAAA"}, "immutable": False},
    ("", "v1", "Pod"): {"apiVersion": "v1", "kind": "Pod", "metadata": _META, "spec": _POD_SPEC},
    ("apps", "v1", "Deployment"): {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _META,
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": "a"}}, "spec": _POD_SPEC}}},
    ("", "v1", "Service"): {"apiVersion": "v1", "kind": "Service", "metadata": _META,
                            "spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}],
                                     "selector": {"app": "a"}, "type": "ClusterIP"}},
}


# -- the typed decode as it walked before the fold, without its fast paths --------------------------------

def _reference_error(obj: dict[str, Any], top: g.GoStruct) -> str | None:
    first: list[str] = []
    try:
        _ref_struct(obj, top, "", first, True)
    except g._Found as hard:
        return str(hard)
    return first[0] if first else None


def _ref_struct(obj: dict[str, Any], go: Any, path: str, first: list[str], top: bool = False) -> None:
    for key, value in obj.items():
        sub = go.fields.get(key)
        if sub is None or (top and key in ("apiVersion", "kind")):
            continue
        _ref(value, sub, go.name, f"{path}.{key}" if path else key, first)


def _ref(value: Any, go: Any, struct: str, path: str, first: list[str]) -> None:
    kind = go.kind
    if value is None or kind == g._ANY:
        return
    if kind == g._BYTES and type(value) is str:  # literalStore's base64.StdEncoding.Decode, its error saved
        if not first and (err := base64_error(value)) is not None:
            first.append(err)
        return
    if kind in (g._STR, g._BYTES):
        ok = type(value) is str
    elif kind == g._BOOL:
        ok = type(value) is bool
    elif kind == g._INT:
        bound = 2**31 if go.type == "int32" else 2**63
        ok = type(value) is int and -bound <= value < bound
    elif kind == g._FLOAT:
        ok = type(value) in (int, float)
    elif kind == g._STRUCT:
        if type(value) is dict:
            _ref_struct(value, go, path, first)
            return
        ok = False
    elif kind in (g._MAP, g._SLICE):
        if type(value) is (dict if kind == g._MAP else list):
            for item in (value.values() if kind == g._MAP else value):
                _ref(item, go.elem, struct, path, first)
            return
        ok = False
    elif kind == g._TIME:
        if type(value) is not str:
            raise g._Found(g._message(value, go, struct, path))
        return
    else:
        if type(value) is not str and not (type(value) is int and -(2**31) <= value < 2**31):
            raise g._Found(g._message(value, g._Go(g._INT, "int32"), struct, path))
        return
    if not ok and not first:
        first.append(g._message(value, go, struct, path))


# -- mutations of the samples --------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["a", "name", "zz"]), inner, max_size=2),
    max_leaves=4,
)


def _dicts(value: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        out.append(value)
        for item in value.values():
            _dicts(item, out)
    elif isinstance(value, list):
        for item in value:
            _dicts(item, out)
    return out


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[tuple[str, str, str], dict[str, Any]]:
    gvk = draw(st.sampled_from(sorted(SAMPLES)))
    body = copy.deepcopy(SAMPLES[gvk])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        dicts = _dicts(body, [])
        target = dicts[draw(st.integers(min_value=0, max_value=len(dicts) - 1))]
        if draw(st.booleans()) or not target:
            target[draw(st.sampled_from(["bogus", "zz", "extra"]))] = draw(_JSON)
        else:
            key = draw(st.sampled_from(sorted(target)))
            target[key] = draw(_JSON)
    return gvk, body


def _top(gvk: tuple[str, str, str]) -> g.GoStruct:
    defname = definition_name_for(*gvk)
    assert defname is not None
    return g.go_struct(defname)


@settings(max_examples=300, deadline=None)
@given(_mutated())
def test_one_walk_gives_the_decodes_error_and_the_schema_walks_unknown_fields(
        case: tuple[tuple[str, str, str], dict[str, Any]]) -> None:
    gvk, body = case
    walked, pruned = copy.deepcopy(body), copy.deepcopy(body)
    decoded = g.decode(walked, _top(gvk))
    assert walked == body, "the walk itself changes nothing"
    assert decoded.error == _reference_error(copy.deepcopy(body), _top(gvk))
    unknown = prune_builtin_unknown_fields(pruned, builtin_schema(*gvk))
    if decoded.error is None:
        assert decoded.unknown == unknown
        decoded.drop_unknown()
        assert walked == pruned
        if decoded.exact:
            assert well_typed(walked)
    else:
        assert not decoded.exact


@pytest.mark.parametrize("gvk", sorted(SAMPLES))
def test_a_well_typed_sample_has_nothing_to_report(gvk: tuple[str, str, str]) -> None:
    decoded = g.decode(copy.deepcopy(SAMPLES[gvk]), _top(gvk))
    assert (decoded.error, decoded.unknown, decoded.exact) == (None, [], True)


@pytest.mark.parametrize(("meta", "exact"), [
    ({"name": "x", "labels": {"a": None}}, False),       # decodes, but the metadata check refuses it
    ({"name": "x", "finalizers": [None]}, False),
    ({"name": "x", "ownerReferences": [None]}, False),
    ({"name": "x", "labels": None, "namespace": None}, True),  # a null field is no null item
])
def test_null_items_decode_but_leave_the_metadata_check_to_run(meta: dict[str, Any], exact: bool) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    decoded = g.decode(body, _top(("", "v1", "ConfigMap")))
    assert (decoded.error, decoded.exact) == (None, exact)
    assert well_typed(body) is exact


@pytest.mark.parametrize("field", ["apiVersion", "kind"])
def test_type_meta_is_not_decoded_and_not_exact_when_it_is_not_a_string(field: str) -> None:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, field: 5}
    decoded = g.decode(body, _top(("", "v1", "ConfigMap")))
    assert (decoded.error, decoded.exact) == (None, False)


def test_a_hard_error_ends_the_walk_and_wins_over_the_first_mismatch() -> None:
    body = {"metadata": {"name": 1, "creationTimestamp": 5}, "data": {"k": True}}
    decoded = g.decode(body, _top(("", "v1", "ConfigMap")))
    assert decoded.error == ("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp "
                             "of type string")


def test_every_built_in_kinds_go_structs_declare_the_fields_its_pruning_plan_declares() -> None:
    """The walk names a key unknown when its Go struct lacks it; the schema walk when its plan does:
    over every built-in kind, the two agree on each struct's fields and on where nothing is unknown."""
    from kubeloop.api import _unknown_fields as u
    from kubeloop.api._schemas import definitions

    seen: set[tuple[int, int]] = set()
    differences: list[str] = []

    def compare(go: Any, plan: Any, where: str) -> None:
        if (id(go), id(plan)) in seen:
            return
        seen.add((id(go), id(plan)))
        if plan is None:  # nothing can be unknown below: no struct below either
            if go.kind == g._STRUCT:
                differences.append(where)
            elif go.kind in (g._MAP, g._SLICE):
                compare(go.elem, None, where + "[]")
        elif go.kind == g._STRUCT:
            if plan.props is None or set(go.fields) != set(plan.props) or plan.extra is not None:
                differences.append(where)
                return
            for key, sub in go.fields.items():
                compare(sub, u._plan(plan.props[key]), f"{where}.{key}")
        elif go.kind == g._MAP and plan.props is None and plan.extra is not None:
            compare(go.elem, u._plan(plan.extra), where + "{}")
        elif go.kind == g._SLICE and plan.items is not None:
            compare(go.elem, u._plan(plan.items), where + "[]")
        else:
            differences.append(where)

    kinds = [name for name, d in definitions().items() if "x-kubernetes-group-version-kind" in d]
    assert len(kinds) > 100
    for name in kinds:
        compare(g.go_struct(name), u._plan({"$ref": "#/$defs/" + name}), name)
    assert differences == []
