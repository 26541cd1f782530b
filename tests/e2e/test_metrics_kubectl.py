"""``kubectl get --raw /metrics`` against ``kubeloop up``: the API server's request counts (as kube-apiserver
labels them), the watches its controller manager keeps open, and the objects stored."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def test_kubectl_reads_the_api_servers_metrics(kubectl: Any, namespace: str) -> None:
    kubectl("create", "configmap", "counted", "-n", namespace, "--from-literal=k=v")
    text = kubectl("get", "--raw", "/metrics").stdout
    samples = [sample for family in text_string_to_metric_families(text) for sample in family.samples]

    def values(name: str, **labels: str) -> list[float]:
        return [s.value for s in samples if s.name == name and labels.items() <= s.labels.items()]

    # kubectl's create and the controller manager's kube-root-ca.crt in each new namespace, among others.
    assert sum(values("apiserver_request_total", verb="POST", resource="configmaps", code="201", group="",
                      version="v1", scope="resource", component="apiserver", dry_run="")) >= 2
    # The controller manager's informers watch, through the serving layer that tells the app each status.
    assert sum(values("apiserver_longrunning_requests", verb="WATCH", resource="pods")) >= 1
    assert values("apiserver_storage_objects", resource="configmaps")[0] >= 2
    assert values("kubernetes_build_info", git_version="v1.32.0") == [1]
