"""Metadata validation gives upstream's messages (apimachinery validation.go, objectmeta.go)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeloop.api import (
    FieldError,
    invalid,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns1035_label,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
    type_errors,
    validate_annotations,
    validate_finalizers,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_owner_references,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


# --- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "abc", "a-b", "a.b", "0", "my-app.example.com", "a" * 253])
def test_valid_dns1123_subdomains(name: str) -> None:
    assert is_dns1123_subdomain(name) == []


@pytest.mark.parametrize("name", ["", "Foo", "-a", "a-", "a..b", "a_b", ".a", "a\n"])
def test_invalid_dns1123_subdomains_get_upstreams_message(name: str) -> None:
    assert is_dns1123_subdomain(name) == [SUBDOMAIN_MSG]


def test_overlong_subdomain_reports_length() -> None:
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns1123_label_rejects_dots_with_a_specific_message() -> None:
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("A") == [LABEL_MSG]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert is_dns1123_label("kube-system") == []


def test_dns1035_label_must_start_with_a_letter() -> None:
    assert is_dns1035_label("1abc") == [DNS1035_MSG]
    assert is_dns1035_label("abc-1") == []


def test_generate_name_prefix_may_end_with_a_dash() -> None:
    assert name_is_dns1123_subdomain("web-", True) == []
    assert name_is_dns1123_label("web-", True) == []
    assert name_is_dns1035_label("web-", True) == []
    assert name_is_dns1123_subdomain("web-", False) == [SUBDOMAIN_MSG]
    assert name_is_dns1123_subdomain("Web-", True) == [SUBDOMAIN_MSG]


# --- qualified names, labels, annotations ------------------------------------------------------


@pytest.mark.parametrize("key", ["app", "App_1", "example.com/app", "a.b/c-d", "a" * 63])
def test_valid_qualified_names(key: str) -> None:
    assert is_qualified_name(key) == []


def test_qualified_name_errors_name_each_part() -> None:
    assert is_qualified_name("-app") == [NAME_PART_MSG]
    assert is_qualified_name("/app") == ["prefix part must be non-empty"]
    assert is_qualified_name("app/") == ["name part must be non-empty", NAME_PART_MSG]
    assert is_qualified_name("Example.com/app") == ["prefix part " + SUBDOMAIN_MSG]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of alphanumeric characters")
    assert is_qualified_name("a/b/c")[0].endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


def test_label_values_may_be_empty_but_not_malformed() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_3") == []
    assert is_valid_label_value("-x") == [LABEL_VALUE_MSG]
    assert is_valid_label_value("x" * 64) == ["must be no more than 63 characters"]


def test_bad_labels_are_reported_at_metadata_labels() -> None:
    errs = validate_labels({"ok": "fine", "bad key": "-x"})
    assert messages(errs) == [
        f'metadata.labels: Invalid value: "bad key": {NAME_PART_MSG}',
        f'metadata.labels: Invalid value: "-x": {LABEL_VALUE_MSG}',
    ]


def test_annotation_keys_are_case_insensitive_qualified_names() -> None:
    assert validate_annotations({"Example.COM/Key": "anything goes here, even spaces"}) == []
    assert [e.value for e in validate_annotations({"bad key": ""})] == ["bad key"]


def test_annotations_over_256_kib_are_too_long() -> None:
    assert validate_annotations({"a": "x" * (256 * 1024 - 1)}) == []
    errs = validate_annotations({"a": "x" * (256 * 1024)})
    assert messages(errs) == ["metadata.annotations: Too long: may not be more than 262144 bytes"]


def test_annotation_size_counts_utf8_bytes() -> None:
    assert validate_annotations({"a": "é" * (128 * 1024)}) != []


# --- finalizers --------------------------------------------------------------------------------


def test_finalizers_must_be_qualified_names() -> None:
    assert validate_finalizers(["kubernetes", "example.com/cleanup"]) == []
    assert messages(validate_finalizers(["bad name"])) == [
        f'metadata.finalizers: Invalid value: "bad name": {NAME_PART_MSG}']


def test_orphan_and_foreground_deletion_together_are_invalid() -> None:
    errs = validate_finalizers(["orphan", "foregroundDeletion"])
    assert len(errs) == 1
    assert errs[0].field == "metadata.finalizers"
    assert errs[0].detail == "finalizer orphan and foregroundDeletion cannot be both set"


# --- ownerReferences ---------------------------------------------------------------------------


def owner(kind: str = "ReplicaSet", name: str = "rs", uid: str = "u1", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, **extra}


def test_valid_owner_references_pass() -> None:
    assert validate_owner_references([owner(controller=True), owner("Deployment", "d", "u2")]) == []


def test_owner_reference_fields_must_be_present() -> None:
    errs = validate_owner_references([{"apiVersion": "apps", "kind": "", "name": "", "uid": ""}])
    assert messages(errs) == [
        'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ]


@pytest.mark.parametrize("api_version", ["", "apps/", "a/b/c"])
def test_owner_reference_api_version_needs_a_version(api_version: str) -> None:
    errs = validate_owner_references([{**owner(), "apiVersion": api_version}])
    assert [(e.field, e.detail) for e in errs] == [("metadata.ownerReferences.apiVersion", "version must not be empty")]


def test_only_one_owner_reference_may_be_the_controller() -> None:
    errs = validate_owner_references([owner(controller=True), owner("Deployment", "d", "u2", controller=True)])
    assert [e.detail for e in errs] == [
        'Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/rs and Deployment/d'
    ]


def test_a_v1_event_cannot_be_an_owner() -> None:
    errs = validate_owner_references([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}])
    assert [e.detail for e in errs] == ["/v1, Kind=Event is disallowed from being an owner"]
    assert validate_owner_references([{"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "u"}]) == []


# --- ObjectMeta on create ----------------------------------------------------------------------


def test_valid_metadata_passes() -> None:
    meta = {"name": "web", "namespace": "default", "labels": {"app": "web"}, "annotations": {"a": "b"},
            "finalizers": ["example.com/f"], "ownerReferences": [owner(controller=True)], "generation": 1}
    assert validate_object_meta(meta, namespaced=True) == []


def test_name_or_generate_name_is_required() -> None:
    errs = validate_object_meta({"namespace": "default"}, namespaced=True)
    assert messages(errs) == ["metadata.name: Required value: name or generateName is required"]


def test_invalid_name_uses_the_kinds_name_validator() -> None:
    errs = validate_object_meta({"name": "a.b"}, namespaced=False, name_validator=name_is_dns1123_label)
    assert messages(errs) == ['metadata.name: Invalid value: "a.b": must not contain dots']
    errs = validate_object_meta({"name": "Web"}, namespaced=False)
    assert messages(errs) == [f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}']


def test_generate_name_is_validated_as_a_prefix() -> None:
    assert validate_object_meta({"name": "web-x7k2p", "generateName": "web-"}, namespaced=False) == []
    errs = validate_object_meta({"name": "x", "generateName": "Web-"}, namespaced=False)
    assert [e.field for e in errs] == ["metadata.generateName"]


def test_namespaced_kinds_need_a_valid_namespace() -> None:
    assert messages(validate_object_meta({"name": "a"}, namespaced=True)) == ["metadata.namespace: Required value"]
    assert messages(validate_object_meta({"name": "a", "namespace": "a.b"}, namespaced=True)) == [
        'metadata.namespace: Invalid value: "a.b": must not contain dots']


def test_cluster_scoped_kinds_forbid_a_namespace() -> None:
    errs = validate_object_meta({"name": "a", "namespace": "x"}, namespaced=False)
    assert messages(errs) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_negative_generation_is_invalid() -> None:
    errs = validate_object_meta({"name": "a", "generation": -1}, namespaced=False)
    assert messages(errs) == ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"]


def test_create_errors_render_as_one_invalid_status() -> None:
    errs = validate_object_meta({"name": "Bad", "labels": {"-": "x"}}, namespaced=False)
    status = invalid("ConfigMap", "Bad", errs).to_status()
    assert status["code"] == 422
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name", "metadata.labels"]


# --- ObjectMeta on update ----------------------------------------------------------------------

OLD = {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "generation": 2,
       "creationTimestamp": "2024-01-01T00:00:00Z"}


def test_unchanged_metadata_is_a_valid_update() -> None:
    assert validate_object_meta_update(dict(OLD), OLD) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [("name", "b"), ("namespace", "other"), ("uid", "u2"), ("creationTimestamp", "2025-01-01T00:00:00Z"),
     ("deletionTimestamp", "2025-01-01T00:00:00Z"), ("deletionGracePeriodSeconds", 30)],
)
def test_system_fields_are_immutable(key: str, value: Any) -> None:
    errs = validate_object_meta_update({**OLD, key: value}, OLD)
    assert [(e.field, e.detail) for e in errs] == [(f"metadata.{key}", "field is immutable")]


def test_update_needs_a_resource_version() -> None:
    new = {k: v for k, v in OLD.items() if k != "resourceVersion"}
    assert messages(validate_object_meta_update(new, OLD)) == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update']


def test_generation_may_not_decrease() -> None:
    assert messages(validate_object_meta_update({**OLD, "generation": 1}, OLD)) == [
        "metadata.generation: Invalid value: 1: must not be decremented"]


def test_no_new_finalizers_while_deleting() -> None:
    old = {**OLD, "deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["a/x"]}
    assert validate_object_meta_update({**old, "finalizers": []}, old) == []
    errs = validate_object_meta_update({**old, "finalizers": ["a/x", "b/y", "a/z"]}, old)
    assert messages(errs) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"a/z", "b/y"}'
    ]


def test_new_finalizers_are_fine_before_deletion() -> None:
    assert validate_object_meta_update({**OLD, "finalizers": ["a/x"]}, OLD) == []


def test_update_still_validates_labels_and_owner_references() -> None:
    errs = validate_object_meta_update({**OLD, "labels": {"k": "-"}, "ownerReferences": [owner(uid="")]}, OLD)
    assert [e.field for e in errs] == ["metadata.labels", "metadata.ownerReferences.uid"]


# --- label selectors in specs ------------------------------------------------------------------


def test_label_selector_in_a_spec_is_validated_with_field_paths() -> None:
    errs = validate_label_selector({
        "matchLabels": {"app": "-"},
        "matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]},
                             {"key": "c", "operator": "Gt", "values": ["1"]}],
    })
    assert [(e.field, e.type) for e in errs] == [
        ("spec.selector.matchLabels", "invalid"),
        ("spec.selector.matchExpressions[0].values", "required"),
        ("spec.selector.matchExpressions[1].values", "forbidden"),
        ("spec.selector.matchExpressions[2].operator", "invalid"),
    ]


# --- JSON types --------------------------------------------------------------------------------


def test_well_typed_objects_have_no_type_errors() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "a", "labels": {"a": "b"}, "finalizers": ["f"], "generation": 1, "deletionTimestamp": None,
        "ownerReferences": [owner(controller=True, blockOwnerDeletion=False)]}}
    assert type_errors(obj) == []
    assert type_errors({}) == []


def test_wrong_json_types_become_field_errors() -> None:
    obj = {"kind": 1, "metadata": {
        "name": 5, "labels": {"a": 1}, "annotations": [], "finalizers": ["ok", 2], "generation": "1",
        "ownerReferences": [{"uid": 1, "controller": "yes"}, "x"]}}
    errs = type_errors(obj)
    assert [e.field for e in errs] == [
        "kind", "metadata.name", "metadata.generation", "metadata.labels[a]", "metadata.annotations",
        "metadata.finalizers[1]", "metadata.ownerReferences[0].uid", "metadata.ownerReferences[0].controller",
        "metadata.ownerReferences[1]",
    ]
    assert all(e.cause_reason == "FieldValueTypeInvalid" for e in errs)
    assert str(errs[1]) == 'metadata.name: Invalid value: "integer": metadata.name in body must be of type string: "integer"'


def test_timestamps_and_managed_fields_of_the_wrong_type_are_field_errors() -> None:
    obj = {"apiVersion": 1, "metadata": {
        "creationTimestamp": 0, "deletionTimestamp": {}, "deletionGracePeriodSeconds": True, "managedFields": {}}}
    errs = type_errors(obj)
    assert [(e.field, str(e.value)) for e in errs] == [
        ("apiVersion", "integer"), ("metadata.creationTimestamp", "integer"), ("metadata.deletionTimestamp", "object"),
        ("metadata.deletionGracePeriodSeconds", "boolean"), ("metadata.managedFields", "object"),
    ]


def test_metadata_that_is_not_an_object_is_one_error() -> None:
    assert [e.field for e in type_errors({"metadata": "x"})] == ["metadata"]
    assert [e.field for e in type_errors([1])] == [""]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=10))
def test_type_errors_never_crash_on_any_json(meta: Any) -> None:
    errs = type_errors({"metadata": meta})
    if not errs and isinstance(meta, dict):
        # Whatever type_errors accepts, the value checks can walk without crashing.
        validate_object_meta(meta, namespaced=True)
        validate_object_meta_update(meta, meta)
