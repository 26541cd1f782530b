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
