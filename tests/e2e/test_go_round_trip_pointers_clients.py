"""kubectl and the official ``kubernetes`` client against ``kubeloop up``: optional Go pointers and slices without
``omitempty`` read back ``null`` when unset, as a 1.32 server's ``encoding/json`` writes them.

core/v1 ``GRPCAction.Service *string `json:"service"```, ``ProjectedVolumeSource.Sources []VolumeProjection
`json:"sources"```; batch/v1 ``PodFailurePolicyRule.OnExitCodes``/``OnPodConditions`` and
``PodFailurePolicyOnExitCodesRequirement.ContainerName *string `json:"containerName"```.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def test_kubectl_get_shows_a_grpc_probes_unset_service_and_empty_projected_sources_as_null(
    kc: Kubectl, namespace: str,
) -> None:
    name = unique("pod")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "livenessProbe": {"grpc": {"port": 8080}}}],
                    "volumes": [{"name": "p", "projected": {"sources": []}}]}}
    kc("create", "-f", kc.write("pod.yaml", pod))
    live = json.loads(kc("get", "pod", name, "-n", namespace, "-o", "json").stdout)
    assert live["spec"]["containers"][0]["livenessProbe"]["grpc"] == {"port": 8080, "service": None}
    (volume,) = [v for v in live["spec"]["volumes"] if v["name"] == "p"]
    assert volume["projected"] == {"sources": None, "defaultMode": 420}
    shown = kc("get", "pod", name, "-n", namespace, "-o", "yaml").stdout
    assert "service: null" in shown and "sources: null" in shown, shown


def test_the_kubernetes_client_reads_a_pod_failure_policys_unset_fields_as_null(cluster: Any, namespace: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        batch = k8s_client.BatchV1Api(api_client)
        name = unique("job")
        job = k8s_client.V1Job(
            metadata=k8s_client.V1ObjectMeta(name=name),
            spec=k8s_client.V1JobSpec(
                suspend=True,
                pod_failure_policy=k8s_client.V1PodFailurePolicy(rules=[
                    k8s_client.V1PodFailurePolicyRule(
                        action="FailJob",
                        on_exit_codes=k8s_client.V1PodFailurePolicyOnExitCodesRequirement(operator="In", values=[42]))]),
                template=k8s_client.V1PodTemplateSpec(spec=k8s_client.V1PodSpec(
                    restart_policy="Never", containers=[k8s_client.V1Container(name="c", image="busybox:1.36")]))))
        batch.create_namespaced_job(namespace, job)
        raw = batch.read_namespaced_job(name, namespace, _preload_content=False)
        (rule,) = json.loads(raw.data)["spec"]["podFailurePolicy"]["rules"]
        assert rule == {"action": "FailJob", "onExitCodes": {"containerName": None, "operator": "In", "values": [42]},
                        "onPodConditions": None}, rule
        assert b'"onPodConditions":null' in raw.data and b'"containerName":null' in raw.data
        typed = batch.read_namespaced_job(name, namespace)
        (read,) = typed.spec.pod_failure_policy.rules
        assert read.on_pod_conditions is None and read.on_exit_codes.container_name is None
        assert read.on_exit_codes.values == [42]
    finally:
        api_client.close()


def test_kubectl_apply_of_a_crd_drops_its_schemas_value_zeros_and_keeps_its_pointer_zeros(
    kc: Kubectl, namespace: str,
) -> None:
    # apiextensions/v1 JSONSchemaProps: Nullable, XEmbeddedResource bool and Description string are values with
    # omitempty (dropped at their zero, in items too: JSONSchemaPropsOrArray's UnmarshalJSON decodes a
    # JSONSchemaProps), MinLength *int64 a pointer (kept); CustomResourceDefinitionVersion Deprecated bool.
    group = f"{unique('g')}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"things.{group}"},
           "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "deprecated": False, "schema": {
                        "openAPIV3Schema": {"type": "object", "nullable": False, "description": "", "properties": {
                            "spec": {"type": "object", "x-kubernetes-embedded-resource": False, "properties": {
                                "name": {"type": "string", "minLength": 0},
                                "tags": {"type": "array", "items": {"type": "string", "nullable": False}}}}}}}}]}}
    kc("apply", "-f", kc.write("crd.yaml", crd))
    live = json.loads(kc("get", "crd", f"things.{group}", "-o", "json").stdout)
    (version,) = live["spec"]["versions"]
    assert "deprecated" not in version
    schema = version["schema"]["openAPIV3Schema"]
    assert schema == {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 0}, "tags": {"type": "array", "items": {"type": "string"}}}}}}


def test_kubectl_replace_emptying_a_selector_is_refused_with_the_empty_map_printed(
    kc: Kubectl, namespace: str,
) -> None:
    # Upstream validates the decoded object: matchLabels {} is an empty, non-nil map, printed by field.Error's
    # %#v as map[string]string{} (apps validation: empty selector; ValidateImmutableField).
    name = unique("deploy")
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
              "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                       "template": {"metadata": {"labels": {"app": name}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    kc("create", "-f", kc.write("deploy.yaml", deploy))
    live = json.loads(kc("get", "deploy", name, "-n", namespace, "-o", "json").stdout)
    live["spec"]["selector"] = {"matchLabels": {}}
    refused = kc("replace", "-f", kc.write("replace.yaml", live), check=False)
    assert refused.returncode == 1
    assert ("spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable") in refused.stderr, refused.stderr
