"""A patch applied to an object its caller hands over (``owned=True``, what PATCH does with the object it
decoded for the attempt) gives the same result, or the same error, as the copying form, on good and bad
patches alike; the patch document itself is never changed (a retried PATCH applies it again)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import (
    ApiError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    builtin_schema,
)

POD = builtin_schema("", "v1", "Pod")

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "b", "$patch", "delete"])
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c", "name"]), inner, max_size=3),
    max_leaves=8,
)
containers = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["x", "y", "z"])},
                                            optional={"image": st.sampled_from(["i", "j"]), "args": json_values}),
                      max_size=3)
pods = st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                              "metadata": st.fixed_dictionaries({"name": st.just("p")}, optional={
                                  "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"])),
                                  "finalizers": st.lists(st.sampled_from(["f", "g"]), max_size=2)})},
                             optional={"spec": st.fixed_dictionaries({"containers": containers}), "extra": json_values})
pointers = st.sampled_from(["", "/metadata", "/metadata/labels/a", "/spec/containers/0", "/spec/containers/-",
                            "/spec/containers/9/name", "/extra", "/extra/a", "/nope/x", "bad"])
json_patches = st.one_of(
    json_values,
    st.lists(st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "test", "move", "copy", "x"]),
                                    "path": pointers},
                                   optional={"value": json_values, "from": pointers}), max_size=4),
)
merge_patches = json_values | st.fixed_dictionaries({}, optional={
    "metadata": st.dictionaries(st.sampled_from(["labels", "finalizers", "name"]), json_values, max_size=2),
    "spec": json_values | st.fixed_dictionaries({}, optional={
        "containers": json_values | st.lists(
            st.fixed_dictionaries({}, optional={"name": st.sampled_from(["x", "y", "w"]) | json_values,
                                                "image": json_values, "$patch": st.sampled_from(["delete", "replace", "x"])}),
            max_size=3),
        "$setElementOrder/containers": json_values,
        "$retainKeys": json_values,
    }),
    "extra": json_values,
    "$patch": st.sampled_from(["replace", "delete", "x"]),
})


def outcome(apply: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", orjson.dumps(apply())
    except ApiError as err:
        return type(err).__name__, err.to_status()


def same_as_copying(obj: dict[str, Any], patch: Any, apply: Callable[..., Any]) -> None:
    kept = copy.deepcopy(patch)
    expected = outcome(lambda: apply(copy.deepcopy(obj), patch))
    owned = copy.deepcopy(obj)
    got = outcome(lambda: apply(owned, patch, owned=True))
    assert got == expected
    assert patch == kept, "the patch document is only read"


@settings(max_examples=300, deadline=None)
@given(pods, json_patches)
def test_an_owned_json_patch_has_the_copying_result_or_error(pod: dict[str, Any], ops: Any) -> None:
    same_as_copying(pod, ops, apply_json_patch)


@settings(max_examples=300, deadline=None)
@given(pods, merge_patches)
def test_an_owned_merge_patch_has_the_copying_result_or_error(pod: dict[str, Any], patch: Any) -> None:
    same_as_copying(pod, patch, apply_merge_patch)


@settings(max_examples=300, deadline=None)
@given(pods, merge_patches)
def test_an_owned_strategic_merge_patch_has_the_copying_result_or_error(pod: dict[str, Any], patch: Any) -> None:
    same_as_copying(pod, patch, lambda obj, p, **kw: apply_strategic_merge_patch(obj, p, POD, **kw))


def test_an_owned_patch_is_applied_to_the_object_handed_over() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}}}
    assert apply_merge_patch(pod, {"metadata": {"labels": {"a": None}}}, owned=True) is pod
    assert pod["metadata"]["labels"] == {}
    assert apply_json_patch(pod, [{"op": "add", "path": "/metadata/labels/b", "value": "2"}], owned=True) is pod
    assert apply_strategic_merge_patch(pod, {"metadata": {"labels": {"c": "3"}}}, POD, owned=True) is pod
    assert pod["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_a_json_patch_that_changes_a_value_it_added_leaves_the_patch_document_alone() -> None:
    # Found by Hypothesis: the root replaced by the patch's own ``{}``, then ``/metadata`` added into it.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    for owned in (False, True):
        patch = [{"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/metadata", "value": {"x": "1"}}]
        assert apply_json_patch(copy.deepcopy(pod), patch, owned=owned) == {"metadata": {"x": "1"}}
        assert patch[0]["value"] == {}, "the patch document is only read"
