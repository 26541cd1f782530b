"""Built-in schemas come from the installed kubernetes-validate package, for Kubernetes 1.32."""

from __future__ import annotations

import subprocess
import sys

from kubeloop.api import (
    builtin_schema,
    definition_name_for,
    definitions,
    items_schema,
    property_schema,
    ref_name,
    resolve,
)


def test_deployment_schema_is_found_by_group_version_kind() -> None:
    assert definition_name_for("apps", "v1", "Deployment") == "io.k8s.api.apps.v1.Deployment"
    schema = builtin_schema("apps", "v1", "Deployment")
    assert schema is not None
    assert set(schema["properties"]) >= {"apiVersion", "kind", "metadata", "spec", "status"}


def test_core_group_kinds_use_the_empty_group() -> None:
    assert definition_name_for("", "v1", "ConfigMap") == "io.k8s.api.core.v1.ConfigMap"
    assert builtin_schema("", "v1", "ConfigMap") is not None


def test_unknown_kind_has_no_schema() -> None:
    assert builtin_schema("example.com", "v1", "Widget") is None
    assert definition_name_for("apps", "v1", "Nope") is None


def test_containers_carry_list_map_and_patch_markers() -> None:
    pod_spec = property_schema(property_schema(builtin_schema("", "v1", "Pod"), "spec"), "containers")
    assert pod_spec is not None
    assert pod_spec["x-kubernetes-list-type"] == "map"
    assert pod_spec["x-kubernetes-list-map-keys"] == ["name"]
    assert pod_spec["x-kubernetes-patch-merge-key"] == "name"
    assert pod_spec["x-kubernetes-patch-strategy"] == "merge"
    container = items_schema(pod_spec)
    assert container is not None and "image" in container["properties"]


def test_sibling_keys_of_a_ref_win_over_the_definition() -> None:
    spec = property_schema(builtin_schema("apps", "v1", "Deployment"), "spec")
    strategy = property_schema(spec, "strategy")
    assert strategy is not None
    # DeploymentSpec.strategy: {"$ref": DeploymentStrategy, "x-kubernetes-patch-strategy": "retainKeys"}
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    assert "rollingUpdate" in strategy["properties"]


def test_map_valued_fields_resolve_through_additional_properties() -> None:
    data = property_schema(builtin_schema("", "v1", "ConfigMap"), "data")
    assert property_schema(data, "any-key") is not None


def test_definitions_are_named_and_refs_point_into_them() -> None:
    defs = definitions()
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in defs
    meta_ref = defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["metadata"]["$ref"]
    assert ref_name(meta_ref) in defs
    resolved = resolve({"$ref": meta_ref})
    assert resolved is not None and "finalizers" in resolved["properties"]


def test_importing_the_api_does_not_load_the_schemas() -> None:
    code = (
        "import sys, kubeloop.api, kubeloop.api._schemas as s;"
        "assert s._definitions is None; assert 'kubernetes_validate' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
