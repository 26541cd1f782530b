"""JSON Patch and JSON Merge Patch, with apiserver handlers/patch.go statuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeloop.api import (
    MAX_JSON_PATCH_OPERATIONS,
    BadRequest,
    Invalid,
    RequestEntityTooLarge,
    apply_json_patch,
    apply_merge_patch,
    copy_json,
    create_merge_patch,
)

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}},
      "data": {"k": "v", "list": ["x", "y"]}}

# --- JSON Patch --------------------------------------------------------------------------------


def test_json_patch_applies_operations_in_order() -> None:
    result = apply_json_patch(CM, [
        {"op": "add", "path": "/data/new", "value": "n"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
        {"op": "remove", "path": "/data/k"},
        {"op": "add", "path": "/data/list/-", "value": "z"},
        {"op": "test", "path": "/data/new", "value": "n"},
        {"op": "copy", "from": "/data/new", "path": "/data/copied"},
        {"op": "move", "from": "/data/copied", "path": "/data/moved"},
    ])
    assert result["data"] == {"new": "n", "list": ["x", "y", "z"], "moved": "n"}
    assert result["metadata"]["labels"] == {"a": "2"}


def test_json_patch_never_mutates_its_input() -> None:
    before = copy.deepcopy(CM)
    result = apply_json_patch(CM, [{"op": "add", "path": "/metadata/labels/b", "value": "2"}])
    assert before == CM
    result["data"]["list"].append("mutated")
    assert before == CM


def test_failing_test_operation_is_invalid_with_the_library_reason() -> None:
    with pytest.raises(Invalid) as info:
        apply_json_patch(CM, [{"op": "test", "path": "/data/k", "value": "other"}])
    err = info.value
    assert err.status_code == 422
    assert err.message == "the server rejected our request due to an error in our request"
    assert err.causes and err.causes[0]["message"]


@pytest.mark.parametrize(
    "op",
    [
        {"op": "remove", "path": "/data/missing"},
        {"op": "replace", "path": "/nope/x", "value": 1},
        {"op": "add", "path": "/data/list/9", "value": 1},
        {"op": "frobnicate", "path": "/data"},
        {"op": "add", "path": "/data/x"},  # no value
        {"op": "add", "path": "no-slash", "value": 1},
        {"path": "/data"},
        {"op": "add", "path": "/data/k/deeper", "value": 1},  # into a string
    ],
)
def test_patches_that_cannot_apply_are_invalid(op: dict[str, Any]) -> None:
    with pytest.raises(Invalid):
        apply_json_patch(CM, [op])


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (["x"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
        ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ],
)
def test_a_body_that_is_not_a_list_of_operations_is_a_bad_request(ops: Any, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        apply_json_patch(CM, ops)
    assert info.value.message == message


def test_null_and_empty_json_patches_change_nothing() -> None:
    assert apply_json_patch(CM, None) == CM
    assert apply_json_patch(CM, []) == CM


def test_more_than_ten_thousand_operations_is_too_large() -> None:
    ops = [{"op": "add", "path": "/x", "value": 1}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(RequestEntityTooLarge) as info:
        apply_json_patch(CM, ops)
    assert info.value.message == "The allowed maximum operations in a JSON patch is 10000, got 10001"
    assert info.value.status_code == 413
    assert apply_json_patch({}, ops[:MAX_JSON_PATCH_OPERATIONS]) == {"x": 1}


# --- merge patch -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        ({"a": "foo"}, "bar", "bar"),
    ],
)
def test_merge_patch_follows_rfc_7386(target: Any, patch: Any, expected: Any) -> None:
    assert apply_merge_patch(target, patch) == expected


def test_a_null_merge_patch_document_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="Invalid JSON Patch"):
        apply_merge_patch(CM, None)


def test_merge_patch_never_mutates_or_shares_with_its_inputs() -> None:
    before = copy.deepcopy(CM)
    patch = {"data": {"extra": {"deep": ["v"]}}, "metadata": {"labels": {"a": None}}}
    patch_before = copy.deepcopy(patch)
    result = apply_merge_patch(CM, patch)
    assert before == CM and patch == patch_before
    result["data"]["list"].append("z")
    result["data"]["extra"]["deep"].append("w")
    assert before == CM and patch == patch_before


def test_create_merge_patch_is_minimal() -> None:
    original = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": True}
    modified = {"a": 1, "b": {"c": 2, "d": 4}, "e": [1, 2, 3], "new": "x"}
    assert create_merge_patch(original, modified) == {"b": {"d": 4}, "e": [1, 2, 3], "gone": None, "new": "x"}
    assert create_merge_patch(original, copy.deepcopy(original)) == {}


def test_create_merge_patch_tells_json_types_apart() -> None:
    assert create_merge_patch({"a": 1}, {"a": True}) == {"a": True}
    assert create_merge_patch({"a": {"b": 1}}, {"a": {"b": 1.0}}) == {"a": {"b": 1.0}}


_scalar = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3))
_json_no_null = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4),
    max_leaves=12,
)
_json = st.recursive(
    st.none() | _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4),
    max_leaves=12,
)


@given(_json, st.dictionaries(st.sampled_from("abcd"), _json_no_null, max_size=4))
def test_applying_a_created_merge_patch_gives_the_target(original: Any, modified: dict[str, Any]) -> None:
    assert apply_merge_patch(original, create_merge_patch(original, modified)) == modified


@given(_json, _json)
def test_merge_patch_leaves_inputs_untouched(target: Any, patch: Any) -> None:
    target_before, patch_before = copy_json(target), copy_json(patch)
    if patch is not None:
        apply_merge_patch(target, patch)
    assert target == target_before and patch == patch_before


@given(_json)
def test_copy_json_is_equal_and_independent(value: Any) -> None:
    copied = copy_json(value)
    assert copied == value
    if isinstance(copied, (dict, list)):
        assert copied is not value
