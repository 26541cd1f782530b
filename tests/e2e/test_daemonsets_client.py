"""The official ``kubernetes`` client against ``kubeloop up``: a DaemonSet follows its nodes as they come and go,
and a template-generation annotation that is no integer is refused.

Upstream (release 1.32): k/k ``pkg/controller/daemon/daemon_controller.go`` (``addNode``, ``manage``,
``updateDaemonSetStatus``: ``desiredNumberScheduled`` counts the nodes that should run a pod; a removed
node's bound pod is the pod garbage collector's) and ``pkg/apis/apps/v1/conversion.go`` (the
``deprecated.daemonset.template.generation`` annotation parsed with ``strconv.ParseInt``; a create that
fails it is 400, ``handlers/rest.go`` ``transformDecodeError``). The nodes are simulated ones
(``kubeloop.dev/simulated``) with a label only this test's set selects.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from .conftest import KubeloopProcess

pytestmark = pytest.mark.slow


def _until(check: Callable[[], Any], what: str, tries: int = 600) -> Any:
    for _ in range(tries):
        if result := check():
            return result
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen")


def _node(name: str, label: str) -> Any:
    """A simulated node with room for pods (a node's status is the creator's to set on create)."""
    room = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name, labels={label: "yes"},
                                                annotations={"kubeloop.dev/simulated": "true"}),
                      status=k8s.V1NodeStatus(capacity=room, allocatable=room))  # fmt: skip


def test_a_daemonset_follows_its_nodes_and_refuses_a_bad_template_generation(
    cluster: KubeloopProcess, namespace: str
) -> None:
    label = f"e2e-ds-{uuid.uuid4().hex[:6]}"
    nodes = [f"{label}-a", f"{label}-b"]
    api = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    with api:
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        if not core.list_node(field_selector="metadata.name=kubeloop-node-1").items:
            pytest.skip("this build's controller manager does not run the node simulator")
        template = k8s.V1PodTemplateSpec(
            metadata=k8s.V1ObjectMeta(labels={"app": "agent"}),
            spec=k8s.V1PodSpec(node_selector={label: "yes"}, termination_grace_period_seconds=0,
                               containers=[k8s.V1Container(name="c", image="nginx:1.25")]))  # fmt: skip
        body = k8s.V1DaemonSet(metadata=k8s.V1ObjectMeta(name="agent"), spec=k8s.V1DaemonSetSpec(
            selector=k8s.V1LabelSelector(match_labels={"app": "agent"}), template=template))  # fmt: skip
        try:
            core.create_node(_node(nodes[0], label))
            created = apps.create_namespaced_daemon_set(namespace, body)
            assert created.metadata.annotations == {"deprecated.daemonset.template.generation": "1"}

            def status(**wanted: int) -> Any:
                found = apps.read_namespaced_daemon_set_status("agent", namespace).status
                return found if all(getattr(found, k) == v for k, v in wanted.items()) else None

            _until(lambda: status(desired_number_scheduled=1, current_number_scheduled=1), "one node")
            core.create_node(_node(nodes[1], label))
            _until(lambda: status(desired_number_scheduled=2, current_number_scheduled=2), "two nodes")

            def bound() -> list[str] | None:
                pods = core.list_namespaced_pod(namespace, label_selector="app=agent").items
                names = sorted(p.spec.node_name or "" for p in pods)
                return names if "" not in names else None

            assert _until(bound, "the scheduler's bindings") == nodes

            core.delete_node(nodes[1])  # its pod stays bound to a name no node has: the pod GC's, later
            _until(lambda: status(desired_number_scheduled=1, current_number_scheduled=1), "the node's removal")

            bad = k8s.V1DaemonSet(metadata=k8s.V1ObjectMeta(
                name="bad", annotations={"deprecated.daemonset.template.generation": "abc"}), spec=body.spec)  # fmt: skip
            with pytest.raises(ApiException) as refused:
                apps.create_namespaced_daemon_set(namespace, bad)
            status_body = json.loads(refused.value.body)
            assert (refused.value.status, status_body["reason"], status_body["message"]) == (
                400, "BadRequest", 'DaemonSet in version "v1" cannot be handled as a DaemonSet: '
                                   'strconv.ParseInt: parsing "abc": invalid syntax')  # fmt: skip
        finally:
            for name in nodes:
                try:
                    core.delete_node(name)
                except ApiException:
                    pass
            core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
