"""Real clients read built-in lists whose items carry no kind/apiVersion, as from kube-apiserver
(kubernetes#3030, #63676, #98925): kubectl sets them back per item (cli-runtime's typesetter), the
official client leaves them None, lightkube decodes its models; a custom resource's items keep them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from lightkube import Client as LightkubeClient
from lightkube import KubeConfig
from lightkube.resources.core_v1 import ConfigMap

from ._kubectl import Kubectl


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def _configmaps(kc: Kubectl, namespace: str, *names: str) -> None:
    for name in names:
        kc.post(f"/api/v1/namespaces/{namespace}/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}})


def test_kubectl_get_json_sets_each_item_kind_that_the_raw_list_omits(kc: Kubectl, namespace: str) -> None:
    _configmaps(kc, namespace, "a", "b")
    raw = json.loads(kc("get", "--raw", f"/api/v1/namespaces/{namespace}/configmaps").stdout)
    assert (raw["kind"], raw["apiVersion"]) == ("ConfigMapList", "v1")
    named = [i for i in raw["items"] if i["metadata"]["name"] in ("a", "b")]
    assert len(named) == 2 and not any("kind" in i or "apiVersion" in i for i in named)

    printed = json.loads(kc("get", "configmaps", "-n", namespace, "-o", "json").stdout)
    assert printed["kind"] == "List"
    mine = [i for i in printed["items"] if i["metadata"]["name"] in ("a", "b")]
    assert [(i["kind"], i["apiVersion"], i["data"]) for i in mine] == [
        ("ConfigMap", "v1", {"k": "a"}), ("ConfigMap", "v1", {"k": "b"}),
    ]
    one = json.loads(kc("get", "configmap", "a", "-n", namespace, "-o", "json").stdout)
    assert (one["kind"], one["apiVersion"]) == ("ConfigMap", "v1")


def test_official_client_and_lightkube_list_built_in_items(cluster: Any, kc: Kubectl, namespace: str) -> None:
    _configmaps(kc, namespace, "a", "b")
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        listed = k8s.CoreV1Api(api_client).list_namespaced_config_map(namespace)
    finally:
        api_client.close()
    assert listed.kind == "ConfigMapList" and listed.api_version == "v1"
    mine = [cm for cm in listed.items if cm.metadata.name in ("a", "b")]
    assert [(cm.metadata.name, cm.data, cm.kind, cm.api_version) for cm in mine] == [
        ("a", {"k": "a"}, None, None), ("b", {"k": "b"}, None, None),
    ]
    client = LightkubeClient(config=KubeConfig.from_file(str(cluster.kubeconfig)), namespace=namespace)
    try:
        assert [(cm.metadata.name, cm.data) for cm in client.list(ConfigMap) if cm.metadata.name in ("a", "b")] == [
            ("a", {"k": "a"}), ("b", {"k": "b"}),
        ]
    finally:
        client.close()
