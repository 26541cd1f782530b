"""Real clients against ``kubeloop up``: kubectl reads back a template's field selector defaulted to
``apiVersion: v1`` and its volumes defaulted (``SetDefaults_Volume``, ``defaultMode`` 420), and the ``kubernetes`` client's ``/status`` patch of a Deployment leaves its labels.

Upstream (release 1.32): k/k ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_ObjectFieldSelector`` (run by
the generated defaulters inside ``spec.template``), ``pkg/registry/apps/deployment/strategy.go``
``deploymentStatusStrategy.PrepareForUpdate`` (the stored spec and labels are kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow


def deployment(name: str, namespace: str) -> dict[str, Any]:
    env = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"tier": "web"}},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "env": env}]}}}}


def test_kubectl_reads_back_a_templates_field_selector_version(cluster: Any, tmp_path: Path, namespace: str) -> None:
    kc = Kubectl(cluster, tmp_path / "home")
    name = unique("env")
    kc("apply", "-f", kc.write("d.yaml", deployment(name, namespace)))
    path = "{.spec.template.spec.containers[0].env[0].valueFrom.fieldRef.apiVersion}"
    result = kc("get", "deployment", name, "-n", namespace, "-o", f"jsonpath={path}")
    assert result.stdout == "v1"


def test_kubectl_reads_back_a_templates_volume_defaults(cluster: Any, tmp_path: Path, namespace: str) -> None:
    # SetDefaults_Volume and SetDefaults_ConfigMapVolumeSource, inside spec.template as in a pod.
    kc = Kubectl(cluster, tmp_path / "home")
    name = unique("vol")
    body = deployment(name, namespace)
    body["spec"]["template"]["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "c"}}, {"name": "scratch"}]
    kc("apply", "-f", kc.write("d.yaml", body))
    path = "{.spec.template.spec.volumes[0].configMap.defaultMode} {.spec.template.spec.volumes[1].emptyDir}"
    result = kc("get", "deployment", name, "-n", namespace, "-o", f"jsonpath={path}")
    assert result.stdout == "420 {}"


def test_the_kubernetes_client_cannot_relabel_a_deployment_through_status(cluster: Any, namespace: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        apps = k8s.AppsV1Api(api_client)
        name = unique("st")
        apps.create_namespaced_deployment(namespace, deployment(name, namespace))
        patched = apps.patch_namespaced_deployment_status(
            name, namespace, {"metadata": {"labels": {"tier": "changed"}, "annotations": {"seen": "yes"}}})
        assert patched.metadata.labels == {"tier": "web"}
        assert patched.metadata.annotations["seen"] == "yes"  # beside the controller's revision annotation
        assert apps.read_namespaced_deployment(name, namespace).metadata.labels == {"tier": "web"}
    finally:
        api_client.close()
