"""Meta helpers read objects safely and write new objects without touching their inputs."""

from __future__ import annotations

import copy
from typing import Any

from kubeloop.api import (
    annotations_of,
    controller_of,
    has_finalizer,
    is_being_deleted,
    labels_of,
    metadata_of,
    name_of,
    namespace_of,
    namespaced_name,
    object_ref,
    owner_reference,
    owner_references,
    uid_of,
    validate_owner_references,
    with_finalizer,
    without_finalizer,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "prod",
        "uid": "u-pod",
        "resourceVersion": "42",
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "finalizers": ["example.com/a"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u-rs", "controller": True},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "u-cm"},
        ],
    },
}


def test_readers_return_the_fields() -> None:
    assert name_of(POD) == "web-1"
    assert namespace_of(POD) == "prod"
    assert uid_of(POD) == "u-pod"
    assert namespaced_name(POD) == "prod/web-1"
    assert labels_of(POD) == {"app": "web"}
    assert annotations_of(POD) == {"note": "x"}
    assert [r["uid"] for r in owner_references(POD)] == ["u-rs", "u-cm"]


def test_readers_give_zero_values_for_missing_or_null_fields() -> None:
    for obj in ({}, {"metadata": None}, {"metadata": {"labels": None, "ownerReferences": None}}):
        assert name_of(obj) == namespace_of(obj) == uid_of(obj) == ""
        assert labels_of(obj) == {} and annotations_of(obj) == {}
        assert owner_references(obj) == []
        assert controller_of(obj) is None
        assert not is_being_deleted(obj)
        assert not has_finalizer(obj, "x")


def test_metadata_of_is_empty_when_metadata_is_missing_or_not_an_object() -> None:
    assert metadata_of({}) == {} and metadata_of({"metadata": None}) == {} and metadata_of({"metadata": 1}) == {}
    assert metadata_of(POD) is POD["metadata"]


def test_cluster_scoped_key_is_just_the_name() -> None:
    assert namespaced_name({"metadata": {"name": "node-a"}}) == "node-a"


def test_controller_of_finds_the_controller_reference() -> None:
    ref = controller_of(POD)
    assert ref is not None and ref["uid"] == "u-rs"
    no_controller = {"metadata": {"ownerReferences": [{"uid": "x", "controller": False}]}}
    assert controller_of(no_controller) is None


def test_is_being_deleted_once_deletion_timestamp_is_set() -> None:
    assert is_being_deleted({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})
    assert not is_being_deleted(POD)


def test_with_finalizer_returns_a_new_object_and_leaves_the_input_alone() -> None:
    before = copy.deepcopy(POD)
    updated = with_finalizer(POD, "example.com/b")
    assert updated["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert has_finalizer(updated, "example.com/b") and not has_finalizer(POD, "example.com/b")
    assert before == POD
    assert updated is not POD and updated["metadata"] is not POD["metadata"]


def test_with_finalizer_does_not_duplicate() -> None:
    assert with_finalizer(POD, "example.com/a")["metadata"]["finalizers"] == ["example.com/a"]
    assert with_finalizer({}, "f")["metadata"] == {"finalizers": ["f"]}


def test_without_finalizer_removes_it_and_drops_an_empty_list() -> None:
    before = copy.deepcopy(POD)
    updated = without_finalizer(POD, "example.com/a")
    assert "finalizers" not in updated["metadata"]
    assert before == POD
    kept = without_finalizer(with_finalizer(POD, "b/c"), "example.com/a")
    assert kept["metadata"]["finalizers"] == ["b/c"]


def test_object_ref_names_the_object_like_an_events_involved_object() -> None:
    assert object_ref(POD) == {"apiVersion": "v1", "kind": "Pod", "namespace": "prod", "name": "web-1",
                               "uid": "u-pod", "resourceVersion": "42"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "u"}}
    assert object_ref(node) == {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}


def test_owner_reference_is_a_valid_reference_to_the_owner() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "uid": "u-rs"}}
    ref = owner_reference(rs, controller=True, block_owner_deletion=True)
    assert ref == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u-rs",
                   "controller": True, "blockOwnerDeletion": True}
    assert validate_owner_references([ref]) == []
    assert "controller" not in owner_reference(rs)
