"""The official ``kubernetes`` client against ``kubeloop up``: ReplicationControllers and PodTemplates.

``CoreV1Api.create_namespaced_replication_controller`` (the selector left to SetDefaults_ReplicationController),
the ``/scale`` subresource (``read_``/``patch_namespaced_replication_controller_scale``, whose Scale carries
the label map as a selector string, as ``scaleFromRC``), ``/status`` read by the typed model, a
``status.replicas`` field selector, a delete without options (core/v1 RCs' DefaultGarbageCollectionPolicy
is OrphanDependents: the pods stay, their ownerReference removed by the garbage collector), and a
PodTemplate's create and list.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from .conftest import KubeloopProcess

pytestmark = pytest.mark.slow


def _until(check: Callable[[], Any], what: str, tries: int = 1200) -> Any:
    for _ in range(tries):
        if result := check():
            return result
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen")


def _template(app: str) -> Any:
    return k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(labels={"app": app}),
        spec=k8s.V1PodSpec(termination_grace_period_seconds=0,
                           containers=[k8s.V1Container(name="c", image="nginx:1.25")]))


def test_replication_controller_scale_status_and_orphaning_delete(cluster: KubeloopProcess, namespace: str) -> None:
    api = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    with api:
        core = k8s.CoreV1Api(api)
        body = k8s.V1ReplicationController(metadata=k8s.V1ObjectMeta(name="worker"),
                                           spec=k8s.V1ReplicationControllerSpec(replicas=1, template=_template("worker")))
        created = core.create_namespaced_replication_controller(namespace, body)
        assert created.spec.selector == {"app": "worker"} and created.metadata.generation == 1

        def pods() -> list[Any]:
            items = core.list_namespaced_pod(namespace, label_selector="app=worker").items
            return [p for p in items if p.metadata.deletion_timestamp is None]

        _until(lambda: len(pods()) == 1, "the first pod")
        scale = core.read_namespaced_replication_controller_scale("worker", namespace)
        assert (scale.spec.replicas, scale.status.selector) == (1, "app=worker")
        scaled = core.patch_namespaced_replication_controller_scale("worker", namespace, {"spec": {"replicas": 2}})
        assert scaled.spec.replicas == 2
        _until(lambda: len(pods()) == 2, "a second pod")

        def observed() -> Any:
            rc = core.read_namespaced_replication_controller_status("worker", namespace)
            ok = rc.status.replicas == 2 and rc.status.ready_replicas == 2 and rc.status.observed_generation == 2
            return rc if ok else None

        rc = _until(observed, "two ready replicas in the status")
        assert rc.status.fully_labeled_replicas == 2
        by_field = core.list_namespaced_replication_controller(namespace, field_selector="status.replicas=2").items
        assert [r.metadata.name for r in by_field] == ["worker"]
        assert core.list_namespaced_replication_controller(namespace, field_selector="status.replicas=5").items == []

        core.delete_namespaced_replication_controller("worker", namespace)  # no propagation policy: Orphan
        _until(lambda: not core.list_namespaced_replication_controller(namespace).items, "the RC's deletion")
        _until(lambda: all(not p.metadata.owner_references for p in pods()), "the pods' orphaning")
        assert len(pods()) == 2


def test_pod_templates_are_created_and_listed(cluster: KubeloopProcess, namespace: str) -> None:
    api = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    with api:
        core = k8s.CoreV1Api(api)
        template = _template("batch")
        template.spec.restart_policy = "OnFailure"
        made = core.create_namespaced_pod_template(namespace, k8s.V1PodTemplate(
            metadata=k8s.V1ObjectMeta(name="batch"), template=template))
        assert (made.metadata.generation, made.template.spec.restart_policy) == (1, "OnFailure")
        assert made.template.spec.dns_policy == "ClusterFirst"
        listed = core.list_namespaced_pod_template(namespace).items
        assert [t.metadata.name for t in listed] == ["batch"]
