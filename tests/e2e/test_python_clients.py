"""The official ``kubernetes`` client and lightkube, unchanged, against ``kubeloop up`` (HTTPS + token)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException
from lightkube import ApiError as LightkubeApiError
from lightkube import Client as LightkubeClient
from lightkube import KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap


@pytest.fixture
def core_v1(cluster: Any) -> Any:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    yield k8s.CoreV1Api(api_client)
    api_client.close()


def test_kubernetes_client_create_get_list_and_conflict(core_v1: Any, namespace: str) -> None:
    body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="kc", labels={"app": "x"}), data={"a": "1"})
    created = core_v1.create_namespaced_config_map(namespace, body)
    assert created.metadata.uid and created.metadata.resource_version
    assert core_v1.read_namespaced_config_map("kc", namespace).data == {"a": "1"}
    listed = core_v1.list_namespaced_config_map(namespace, label_selector="app=x")
    assert [cm.metadata.name for cm in listed.items] == ["kc"]

    created.data = {"a": "2"}
    core_v1.replace_namespaced_config_map("kc", namespace, created)
    created.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        core_v1.replace_namespaced_config_map("kc", namespace, created)
    assert stale.value.status == 409
    with pytest.raises(ApiException) as exists:
        core_v1.create_namespaced_config_map(namespace, body)
    assert exists.value.status == 409


def test_kubernetes_client_watch_sees_events_in_order(core_v1: Any, namespace: str) -> None:
    start_rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version
    seen: list[tuple[str, str]] = []

    def writer() -> None:
        core_v1.create_namespaced_config_map(namespace, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="w")))
        core_v1.patch_namespaced_config_map("w", namespace, {"data": {"k": "v"}})
        core_v1.delete_namespaced_config_map("w", namespace)

    thread = threading.Thread(target=writer)
    thread.start()
    w = k8s_watch.Watch()
    for event in w.stream(core_v1.list_namespaced_config_map, namespace, resource_version=start_rv, timeout_seconds=20):
        seen.append((event["type"], event["object"].metadata.name))
        if event["type"] == "DELETED":
            w.stop()
    thread.join()
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_lightkube_create_get_list_and_errors(cluster: Any, namespace: str) -> None:
    client = LightkubeClient(config=KubeConfig.from_file(str(cluster.kubeconfig)), namespace=namespace)
    try:
        client.create(ConfigMap(metadata=ObjectMeta(name="lk"), data={"a": "1"}))
        assert client.get(ConfigMap, "lk").data == {"a": "1"}
        # Every namespace of a real cluster holds the root-ca-cert-publisher's kube-root-ca.crt.
        assert [cm.metadata.name for cm in client.list(ConfigMap)] == ["kube-root-ca.crt", "lk"]
        with pytest.raises(LightkubeApiError) as missing:
            client.get(ConfigMap, "nope")
        assert missing.value.status.code == 404
        assert missing.value.status.reason == "NotFound"
        client.delete(ConfigMap, "lk")
        assert [cm.metadata.name for cm in client.list(ConfigMap)] == ["kube-root-ca.crt"]
    finally:
        client.close()
