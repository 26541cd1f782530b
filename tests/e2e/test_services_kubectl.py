"""kubectl against ``kubeloop up``: ``kubectl expose deployment`` gives a Service with a cluster IP, and
``kubectl get endpoints`` / ``get endpointslices`` list the ready pods' IPs (k/k release-1.32 service
allocation, endpoints and endpointslice controllers, printers.go tables)."""

from __future__ import annotations

import ipaddress
import json
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _until(check: Any, what: str, tries: int = 300) -> Any:
    for _ in range(tries):
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def test_expose_a_deployment_and_read_its_endpoints(kubectl: Any, namespace: str) -> None:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    if not nodes:
        pytest.skip("this build's controller manager does not run the node simulator")
    kubectl("create", "deployment", "web", "-n", namespace, "--image=nginx:1.25", "--replicas=2", "--port=80")
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s", timeout=90)
    kubectl("expose", "deployment", "web", "-n", namespace, "--port", "80")

    svc = json.loads(kubectl("get", "svc", "web", "-n", namespace, "-o", "json").stdout)
    cluster_ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(cluster_ip) in ipaddress.ip_network("10.96.0.0/12")
    assert svc["spec"]["selector"] == {"app": "web"}
    row = kubectl("get", "svc", "web", "-n", namespace, "--no-headers").stdout.split()
    assert row[:5] == ["web", "ClusterIP", cluster_ip, "<none>", "80/TCP"]

    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "app=web", "-o", "json").stdout)["items"]
    ips = sorted(p["status"]["podIP"] for p in pods)
    assert len(ips) == 2

    def listed() -> list[str] | None:
        out = kubectl("get", "endpoints", "web", "-n", namespace, "-o",
                      "jsonpath={.subsets[*].addresses[*].ip}", check=False)
        got = sorted(out.stdout.split()) if out.returncode == 0 else []
        return got if got == ips else None

    _until(listed, "the endpoints list both ready pods")
    table = kubectl("get", "ep", "web", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert sorted(table[1].split()[1].split(",")) == sorted(f"{ip}:80" for ip in ips)

    def sliced() -> list[str] | None:
        out = kubectl("get", "endpointslices", "-n", namespace, "-l", "kubernetes.io/service-name=web").stdout
        lines = out.splitlines()
        return lines if len(lines) == 2 and sorted(lines[1].split()[3].split(",")) == ips else None

    lines = _until(sliced, "one EndpointSlice lists both pods")
    assert lines[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert lines[1].split()[1:3] == ["IPv4", "80"]

    refused = kubectl("create", "service", "clusterip", "again", "-n", namespace, "--tcp=80:80",
                      f"--clusterip={cluster_ip}", check=False)
    assert refused.returncode != 0
    assert "provided IP is already allocated" in refused.stderr


def test_kubernetes_client_sees_validation_and_immutability(cluster: Any, namespace: str) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException

    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        _validation_and_immutability(k8s.CoreV1Api(api_client), k8s, ApiException, namespace)
    finally:
        api_client.close()


def _validation_and_immutability(api: Any, k8s: Any, ApiException: Any, namespace: str) -> None:
    body = k8s.V1Service(metadata=k8s.V1ObjectMeta(name="db"), spec=k8s.V1ServiceSpec(
        selector={"app": "db"}, ports=[k8s.V1ServicePort(port=5432), k8s.V1ServicePort(port=5433)]))
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_service(namespace, body)
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["details"]["causes"][0] == {
        "reason": "FieldValueRequired", "field": "spec.ports[0].name", "message": "Required value"}
    body.spec.ports = [k8s.V1ServicePort(port=5432, node_port=31432)]
    body.spec.type = "NodePort"
    made = api.create_namespaced_service(namespace, body)
    assert made.spec.ports[0].node_port == 31432 and made.spec.ip_families == ["IPv4"]
    with pytest.raises(ApiException) as immutable:
        api.patch_namespaced_service("db", namespace, {"spec": {"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}})
    assert immutable.value.status == 422
    assert "may not change once set" in json.loads(immutable.value.body)["message"]
