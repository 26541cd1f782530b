"""Strategic merge patch follows apimachinery pkg/util/strategicpatch/patch.go on built-in schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeloop.api import BadRequest, apply_strategic_merge_patch, builtin_schema, create_strategic_merge_patch
from kubeloop.api._strategic import go_format

DEPLOYMENT = builtin_schema("apps", "v1", "Deployment")
POD = builtin_schema("", "v1", "Pod")


def _pod(*containers: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", **meta},
        "spec": {"containers": list(containers)},
    }


def _deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": containers}},
            **spec,
        },
    }


def test_containers_merge_by_name_and_keep_unpatched_fields() -> None:
    pod = _pod({"name": "a", "image": "a:1", "args": ["x"]}, {"name": "b", "image": "b:1"})
    out = apply_strategic_merge_patch(pod, {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}, POD)
    assert out["spec"]["containers"] == [{"name": "a", "image": "a:1", "args": ["x"]}, {"name": "b", "image": "b:2"}]
    assert pod["spec"]["containers"][1]["image"] == "b:1", "input must not be mutated"


def test_a_new_container_without_set_element_order_goes_before_server_only_items() -> None:
    # patch.go mergeSortedSlice: items absent from the live order win ties, so they come first.
    pod = _pod({"name": "a", "image": "a:1"})
    out = apply_strategic_merge_patch(pod, {"spec": {"containers": [{"name": "c", "image": "c:1"}]}}, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["c", "a"]


def test_set_element_order_fixes_the_order_of_a_merged_list() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"})
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}, {"name": "b"}],
            "containers": [{"name": "c", "image": "c:1"}],
        }
    }
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "c", "b"]
    assert "$setElementOrder/containers" not in out["spec"]


def test_patch_delete_directive_removes_one_container() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"})
    out = apply_strategic_merge_patch(pod, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, POD)
    assert out["spec"]["containers"] == [{"name": "b", "image": "b:1"}]


def test_patch_replace_directive_in_a_list_replaces_the_whole_list() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"})
    patch = {"spec": {"containers": [{"$patch": "replace"}, {"name": "z", "image": "z:1"}]}}
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert out["spec"]["containers"] == [{"name": "z", "image": "z:1"}]


def test_patch_replace_directive_on_a_map_replaces_it() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, labels={"x": "1", "y": "2"})
    out = apply_strategic_merge_patch(pod, {"metadata": {"labels": {"$patch": "replace", "z": "3"}}}, POD)
    assert out["metadata"]["labels"] == {"z": "3"}


def test_patch_delete_directive_on_a_map_empties_it() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, labels={"x": "1"})
    out = apply_strategic_merge_patch(pod, {"metadata": {"labels": {"$patch": "delete"}}}, POD)
    assert out["metadata"]["labels"] == {}


def test_null_deletes_a_key() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, labels={"x": "1", "y": "2"})
    out = apply_strategic_merge_patch(pod, {"metadata": {"labels": {"x": None}}}, POD)
    assert out["metadata"]["labels"] == {"y": "2"}


def test_env_entries_merge_by_name() -> None:
    pod = _pod({"name": "a", "image": "a:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]})
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}
    out = apply_strategic_merge_patch(pod, patch, POD)
    env = {e["name"]: e["value"] for e in out["spec"]["containers"][0]["env"]}
    assert env == {"A": "1", "B": "3", "C": "4"}


def test_ports_merge_by_container_port() -> None:
    pod = _pod({"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "name": "http"}]})
    patch = {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]


def test_lists_without_merge_strategy_are_replaced() -> None:
    pod = _pod({"name": "a", "image": "a:1", "args": ["x", "y"]})
    pod["spec"]["tolerations"] = [{"key": "k1", "operator": "Exists"}]
    patch = {
        "spec": {
            "tolerations": [{"key": "k2", "operator": "Exists"}],
            "containers": [{"name": "a", "args": ["z"]}],
        }
    }
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]
    assert out["spec"]["containers"][0]["args"] == ["z"]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, finalizers=["f/one", "f/two"])
    added = apply_strategic_merge_patch(pod, {"metadata": {"finalizers": ["f/two", "f/three"]}}, POD)
    assert sorted(added["metadata"]["finalizers"]) == ["f/one", "f/three", "f/two"]
    removed = apply_strategic_merge_patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f/one"]}}, POD)
    assert removed["metadata"]["finalizers"] == ["f/two"]


def test_delete_from_primitive_list_of_an_absent_list_adds_nothing() -> None:
    pod = _pod({"name": "a", "image": "a:1"})
    out = apply_strategic_merge_patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f/one"]}}, POD)
    assert "finalizers" not in out["metadata"]


def test_retain_keys_clears_the_other_strategy_fields() -> None:
    deployment = _deployment(
        [{"name": "a", "image": "a:1"}],
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
    )
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_list_every_patched_field() -> None:
    deployment = _deployment([{"name": "a", "image": "a:1"}], strategy={"type": "RollingUpdate"})
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}
    with pytest.raises(BadRequest, match="invalid patch format of retainKeys"):
        apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)


def test_rollout_restart_annotation_patch_adds_the_template_annotation() -> None:
    deployment = _deployment([{"name": "a", "image": "a:1"}])
    stamp = "2024-01-01T00:00:00Z"
    patch = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}}}
    out = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)
    assert out["spec"]["template"]["metadata"] == {
        "labels": {"app": "d"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": stamp},
    }
    assert out["spec"]["template"]["spec"] == deployment["spec"]["template"]["spec"]


def test_kubectl_edit_style_patch_changes_one_image() -> None:
    deployment = _deployment([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"image": "b:2", "name": "b"}],
                }
            }
        }
    }
    out = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]


def test_owner_references_merge_by_uid() -> None:
    pod = _pod({"name": "a", "image": "a:1"}, ownerReferences=[{"uid": "1", "name": "o1", "kind": "K", "apiVersion": "v1"}])
    patch = {"metadata": {"ownerReferences": [{"uid": "2", "name": "o2", "kind": "K", "apiVersion": "v1"}]}}
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert {r["uid"] for r in out["metadata"]["ownerReferences"]} == {"1", "2"}


def test_unknown_fields_merge_like_a_merge_patch() -> None:
    pod = _pod({"name": "a", "image": "a:1"})
    pod["extra"] = {"a": 1, "list": [1, 2]}
    out = apply_strategic_merge_patch(pod, {"extra": {"b": 2, "list": [3]}}, POD)
    assert out["extra"] == {"a": 1, "b": 2, "list": [3]}


def test_without_schema_lists_are_replaced_and_maps_merged() -> None:
    out = apply_strategic_merge_patch({"a": {"x": 1}, "l": [1]}, {"a": {"y": 2}, "l": [2]}, None)
    assert out == {"a": {"x": 1, "y": 2}, "l": [2]}


def test_directives_do_not_leak_into_added_values() -> None:
    pod = _pod({"name": "a", "image": "a:1"})
    patch = {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}}
    out = apply_strategic_merge_patch(pod, patch, POD)
    assert out["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"spec": {"containers": [{"image": "x"}]}}, "does not contain declared merge key: name"),
        ({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}, "unknown patch type: bogus"),
        ({"spec": {"containers": [{"$patch": "merge"}]}}, "merging lists cannot yet be specified"),
        ({"metadata": {"$setElementOrder/finalizers": "nope"}}, "invalid patch format of setElementOrder list"),
        ({"metadata": {"labels": {"$patch": "bogus"}}}, "unknown patch type"),
    ],
)
def test_malformed_patches_are_bad_requests(patch: dict[str, Any], message: str) -> None:
    pod = _pod({"name": "a", "image": "a:1"}, labels={"x": "1"}, finalizers=["f/a"])
    with pytest.raises(BadRequest, match=message):
        apply_strategic_merge_patch(pod, patch, POD)


def test_a_patch_that_is_not_an_object_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="cannot unmarshal array"):
        apply_strategic_merge_patch({}, [1, 2], POD)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="a:2"),
        lambda d: d["spec"]["template"]["spec"]["containers"].append({"name": "c", "image": "c:1"}),
        lambda d: d["spec"]["template"]["spec"]["containers"].pop(0),
        lambda d: d["spec"]["template"]["spec"]["containers"].reverse(),
        lambda d: d["metadata"].update(finalizers=["f/b", "f/c"]),
        lambda d: d["metadata"].update(labels={"new": "1"}),
        lambda d: d["spec"].update(strategy={"type": "Recreate"}),
        lambda d: d["spec"].pop("replicas"),
    ],
)
def test_created_patch_turns_original_into_modified(edit: Any) -> None:
    original = _deployment(
        [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
    )
    original["metadata"].update(finalizers=["f/a", "f/b"], labels={"old": "1"})
    modified = json.loads(json.dumps(original))
    edit(modified)
    patch = create_strategic_merge_patch(original, modified, DEPLOYMENT)
    assert apply_strategic_merge_patch(original, patch, DEPLOYMENT) == modified


def test_created_patch_uses_directives_like_kubectl() -> None:
    original = _deployment([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    modified = json.loads(json.dumps(original))
    modified["spec"]["template"]["spec"]["containers"] = [{"name": "b", "image": "b:2"}]
    patch = create_strategic_merge_patch(original, modified, DEPLOYMENT)
    assert patch == {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"image": "b:2", "name": "b"}, {"$patch": "delete", "name": "a"}],
                    "$setElementOrder/containers": [{"name": "b"}],
                }
            }
        }
    }


@pytest.mark.parametrize(
    ("original", "modified", "message"),
    [
        (_pod({"name": "a"}), _pod({"image": "x"}), r"^map: map\[image:x\] does not contain declared merge key: name$"),
        (_pod(finalizers=["f/a"]), _pod(finalizers=[{"x": 1}]), "^cannot merge lists without merge key for type map$"),
        (_pod(finalizers=["f/a"]), _pod(finalizers=[["f/b"]]), "^lists of lists are not supported$"),
    ],
)
def test_creating_a_patch_between_malformed_lists_is_a_bad_request(
    original: dict[str, Any], modified: dict[str, Any], message: str
) -> None:
    with pytest.raises(BadRequest, match=message):
        create_strategic_merge_patch(original, modified, POD)


def test_go_format_prints_floats_as_go_prints_a_float64() -> None:
    # fmt's %v of a float64 is strconv.FormatFloat(v, 'g', -1, 64): exponent form from 1e6 and below
    # 1e-4; JSON integers decode to int64 (apimachinery util/json) and print whole.
    value = {"a": 1000000.0, "b": 0.5, "c": 1.0, "d": 1e-5, "e": 7, "f": [1e21, -2.5]}
    assert go_format(value) == "map[a:1e+06 b:0.5 c:1 d:1e-05 e:7 f:[1e+21 -2.5]]"
