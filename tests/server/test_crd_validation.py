"""CRD defaulting, validation and naming status (apiextensions-apiserver validation.go, naming_controller.go)."""

from __future__ import annotations

import copy
from typing import Any

from kubeloop.server._crd import resource_infos
from kubeloop.server._crd_validation import accepted_status, default_crd, validate_crd

NOW = "2024-01-01T00:00:00Z"


def crd(**spec_overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
            }
        ],
    }
    spec.update(spec_overrides)
    obj = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": spec,
    }
    default_crd(obj)
    return obj


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in validate_crd(obj, old)]


def test_defaults_fill_singular_list_kind_and_conversion() -> None:
    names = crd()["spec"]["names"]
    assert names["singular"] == "widget" and names["listKind"] == "WidgetList"
    assert crd()["spec"]["conversion"] == {"strategy": "None"}
    assert messages(crd()) == []


def test_name_must_be_plural_dot_group() -> None:
    obj = crd()
    obj["metadata"]["name"] = "gadgets.example.com"
    assert messages(obj) == [
        'metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group'
    ]


def test_scope_and_group_are_checked() -> None:
    assert messages(crd(scope="Global")) == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'
    ]
    obj = crd(group="example")
    obj["metadata"]["name"] = "widgets.example"
    assert messages(obj) == ['spec.group: Invalid value: "example": should be a domain with at least one dot']


def test_exactly_one_storage_version_and_schemas_required() -> None:
    obj = crd()
    obj["spec"]["versions"].append(copy.deepcopy(obj["spec"]["versions"][0]) | {"name": "v2"})
    errors = messages(obj)
    assert len(errors) == 1 and errors[0].endswith("must have exactly one version marked as storage version")
    obj = crd()
    del obj["spec"]["versions"][0]["schema"]
    assert messages(obj) == ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]


def test_schema_must_be_structural() -> None:
    obj = crd()
    obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {"properties": {}}
    assert messages(obj) == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
        "must not be empty for specified object fields"
    ]


def test_scale_paths_must_point_into_spec_and_status() -> None:
    obj = crd()
    obj["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = ".replicas"
    assert messages(obj) == [
        'spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".replicas": should be a json path under .spec'
    ]


def test_group_and_plural_are_immutable_scope_once_established() -> None:
    old = crd()
    old["status"] = accepted_status(old, [], now=NOW)
    new = crd(scope="Cluster")
    assert messages(new, old) == ['spec.scope: Invalid value: "Cluster": field is immutable']


def test_status_accepts_names_establishes_and_records_stored_versions() -> None:
    status = accepted_status(crd(), [], now=NOW)
    assert status["acceptedNames"]["plural"] == "widgets"
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
    }
    assert status["storedVersions"] == ["v1"]


def test_a_plural_already_used_in_the_group_is_not_accepted() -> None:
    rival = crd()
    rival["metadata"]["name"] = "widgets2.example.com"
    rival["status"] = accepted_status(rival, [], now=NOW)
    status = accepted_status(crd(), [rival], now=NOW)
    names_accepted = next(c for c in status["conditions"] if c["type"] == "NamesAccepted")
    assert (names_accepted["status"], names_accepted["reason"]) == ("False", "PluralConflict")
    assert names_accepted["message"] == '"widgets" is already in use'


def test_resource_infos_follow_the_crd() -> None:
    obj = crd()
    obj["spec"]["versions"].append(
        copy.deepcopy(obj["spec"]["versions"][0]) | {"name": "v1beta1", "storage": False, "served": True}
    )
    obj["spec"]["versions"].append(
        copy.deepcopy(obj["spec"]["versions"][0]) | {"name": "v1alpha1", "storage": False, "served": False}
    )
    infos = resource_infos(obj)
    assert [i.version for i in infos] == ["v1", "v1beta1"]
    info = infos[0]
    assert (info.custom, info.tracks_generation, info.allow_unconditional_update) == (True, True, False)
    assert info.status_subresource and info.scale is not None and info.scale.spec_replicas == ".spec.replicas"
    assert info.short_names == ("wd",) and info.categories == ("all",) and info.namespaced
