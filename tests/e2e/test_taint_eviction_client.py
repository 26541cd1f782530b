"""The official ``kubernetes`` client against ``kubeloop up``: deleting a pod whose taint eviction is
pending cancels it, with upstream's ``TaintManagerEviction`` Event (``pkg/controller/tainteviction``:
``handlePodUpdate`` on a pod no longer found -> ``cancelWorkWithEvent``)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from .conftest import KubeloopProcess

pytestmark = pytest.mark.slow

NODE = "e2e-taint-eviction"


def _events(core: Any, namespace: str) -> list[str]:
    items = core.list_namespaced_event(namespace, field_selector="reason=TaintManagerEviction").items
    return [e.message for e in items if e.involved_object.name == "web"]


def test_deleting_a_pod_with_a_pending_eviction_cancels_it(cluster: KubeloopProcess, namespace: str) -> None:
    api = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    with api:
        core = k8s.CoreV1Api(api)
        if not core.list_node(field_selector="metadata.name=kubeloop-node-1").items:
            pytest.skip("this build's controller manager does not run the node simulator")
        core.create_node(k8s.V1Node(
            metadata=k8s.V1ObjectMeta(name=NODE, annotations={"kubeloop.dev/simulated": "true"}),
            spec=k8s.V1NodeSpec(taints=[k8s.V1Taint(key="maint", effect="NoExecute")])))
        try:
            core.create_namespaced_pod(namespace, k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(name="web"),
                spec=k8s.V1PodSpec(node_name=NODE, containers=[k8s.V1Container(name="app", image="nginx:1.25")],
                                   tolerations=[k8s.V1Toleration(key="maint", operator="Exists", effect="NoExecute",
                                                                 toleration_seconds=3600)])))
            time.sleep(1)  # the taint-eviction controller schedules the pod's eviction an hour out
            assert _events(core, namespace) == []
            core.delete_namespaced_pod("web", namespace, grace_period_seconds=0)
            for _ in range(100):
                if _events(core, namespace):
                    break
                time.sleep(0.1)
            assert _events(core, namespace) == [f"Cancelling deletion of Pod {namespace}/web"]
        finally:
            core.delete_node(NODE)
