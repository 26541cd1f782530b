"""kubectl and the official ``kubernetes`` client against ``kubeloop up``: built-in objects read back as
upstream 1.32's Go round trip leaves them.

A pod template's ObjectMeta is a value struct whose zero ``creationTimestamp`` encodes as ``null``
(apimachinery ``meta/v1/time.go`` ``Time.MarshalJSON``; 1.33 stopped writing it, kubernetes/kubernetes
#130989), so ``kubectl get deploy -o yaml`` shows ``creationTimestamp: null`` under
``spec.template.metadata``, and ``kubectl-create`` owns no ``f:creationTimestamp``. A ``null`` field of a
body decodes to the Go zero value, which ``omitempty`` drops.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def test_kubectl_get_deploy_shows_the_template_creation_timestamp_null(kc: Kubectl, namespace: str) -> None:
    name = unique("deploy")
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    kc("create", "-f", kc.write("deploy.yaml", manifest))
    shown = kc("get", "deploy", name, "-n", namespace, "-o", "yaml", "--show-managed-fields").stdout
    live = yaml.safe_load(shown)
    template = live["spec"]["template"]["metadata"]
    assert "creationTimestamp" in template and template["creationTimestamp"] is None
    assert "    metadata:\n      creationTimestamp: null\n      labels:" in shown
    (created,) = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl-create"]
    assert "f:creationTimestamp" not in created["fieldsV1"]["f:spec"]["f:template"]["f:metadata"]


def test_the_kubernetes_client_reads_no_null_maps_back(cluster: Any, namespace: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        core = k8s_client.CoreV1Api(api_client)
        url = f"{api_client.configuration.host}/api/v1/namespaces/{namespace}/configmaps"
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {cluster.token}"}
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nulls", "labels": None},
                "data": None}
        response = api_client.call_api("POST", url, header_params=headers, body=body)
        response.read()
        assert response.status == 201, response.data
        read = core.read_namespaced_config_map("nulls", namespace)
        assert read.data is None and read.metadata.labels is None
        raw = core.read_namespaced_config_map("nulls", namespace, _preload_content=False)
        stored = yaml.safe_load(raw.data)
        assert "data" not in stored and "labels" not in stored["metadata"]
        assert stored["metadata"].get("managedFields") in (None, [])
    finally:
        api_client.close()



def test_a_raw_create_with_a_resource_version_is_refused_by_the_storage_but_not_on_dry_run(
    kc: Kubectl, namespace: str,
) -> None:
    # etcd3 store.Create: storage.ErrResourceVersionSetOnCreate, a 500 with no reason; a dry run never asks
    # it. (``kubectl create -f`` clears a manifest's resourceVersion itself: resource.Helper.Create.)
    name = unique("cm")
    manifest = kc.home / "cm.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "resourceVersion": "12"}}))
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    dry = kc("create", "--raw", f"{path}?dryRun=All", "-f", str(manifest))
    assert json.loads(dry.stdout)["metadata"]["name"] == name
    refused = kc("create", "--raw", path, "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith("resourceVersion should not be set on objects to be created"), refused.stderr
    assert kc.api_status(f"{path}/{name}") == 404


def test_kubectl_reads_back_empty_lists_and_maps_as_a_1_32_server_stores_them(kc: Kubectl, namespace: str) -> None:
    # core/v1 Container: Ports, VolumeMounts `json:"...,omitempty"`; PodSpec: NodeSelector omitempty; ObjectMeta:
    # Annotations omitempty (a template's too): an empty one is not written. ResourceFieldSelector: Divisor
    # resource.Quantity (a value): "0". rbac/v1 Role: Rules `json:"rules"`: an empty slice stored as protobuf
    # reads back nil, `rules: null`.
    name = unique("deploy")
    container = {"name": "c", "image": "nginx:1.25", "ports": [], "volumeMounts": [],
                 "env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
              "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                       "template": {"metadata": {"labels": {"app": name}, "annotations": {}},
                                    "spec": {"nodeSelector": {}, "containers": [container]}}}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace}, "rules": []}
    kc("create", "-f", kc.write("objs.yaml", deploy, role))
    live = yaml.safe_load(kc("get", "deploy", name, "-n", namespace, "-o", "yaml").stdout)
    template = live["spec"]["template"]
    assert "annotations" not in template["metadata"] and "nodeSelector" not in template["spec"]
    (got,) = template["spec"]["containers"]
    assert not {"ports", "volumeMounts"} & set(got)
    assert got["env"][0]["valueFrom"]["resourceFieldRef"] == {"resource": "limits.cpu", "divisor": "0"}
    shown = kc("get", "role", name, "-n", namespace, "-o", "yaml").stdout
    assert "\nrules: null\n" in shown, shown


def test_kubectl_apply_then_get_shows_no_value_zeros_and_keeps_pointer_zeros(kc: Kubectl, namespace: str) -> None:
    # apps/v1 DeploymentSpec Paused bool, MinReadySeconds int32 and core/v1 PodSpec HostNetwork bool,
    # Container Stdin bool are values with omitempty: decoded to their zero, then omitted and owned by no
    # manager. DeploymentSpec Replicas *int32 and SecurityContext AllowPrivilegeEscalation *bool keep theirs.
    name = unique("zeros")
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": 0, "paused": False, "minReadySeconds": 0,
                         "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"hostNetwork": False, "containers": [
                                          {"name": "c", "image": "nginx:1.25", "stdin": False,
                                           "securityContext": {"allowPrivilegeEscalation": False}}]}}}}
    kc("apply", "-f", kc.write("zeros.yaml", manifest))
    live = json.loads(kc("get", "deploy", name, "-n", namespace, "-o", "json", "--show-managed-fields").stdout)
    spec = live["spec"]
    assert "paused" not in spec and "minReadySeconds" not in spec and spec["replicas"] == 0, spec
    pod_spec = spec["template"]["spec"]
    assert "hostNetwork" not in pod_spec and "stdin" not in pod_spec["containers"][0], pod_spec
    assert pod_spec["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False}
    (entry,) = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl-client-side-apply"]
    owned = json.dumps(entry["fieldsV1"])
    assert '"f:paused"' not in owned and '"f:minReadySeconds"' not in owned and '"f:hostNetwork"' not in owned
    assert '"f:replicas"' in owned and '"f:allowPrivilegeEscalation"' in owned
