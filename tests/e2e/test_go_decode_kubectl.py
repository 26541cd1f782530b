"""kubectl and the official ``kubernetes`` client against ``kubeloop up``: a built-in object whose JSON
has a value of the wrong type is refused as a real cluster refuses it, by decoding into the Go struct
(``sigs.k8s.io/json`` ``UnmarshalTypeError``; apiserver handlers/rest.go ``transformDecodeError``), and
nothing is created."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.slow


def test_kubectl_create_raw_gets_the_decode_error(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    # kubectl create -f decodes a manifest itself (and fails first); --raw sends the bytes as they are.
    manifest = tmp_path / "cm.json"
    manifest.write_text('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed","labels":{"app":true}}}')
    result = kubectl("create", "--raw", f"/api/v1/namespaces/{namespace}/configmaps", "-f", str(manifest),
                     check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
        "unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string")
    assert kubectl("get", "configmap", "typed", "-n", namespace, check=False).returncode == 1


def test_the_kubernetes_client_gets_a_400_for_a_boolean_configmap_value(cluster: Any, namespace: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        # The typed method refuses a boolean value itself; the client's own request path
        # (call_api, which adds no credentials of its own) sends it as is.
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typed"}, "data": {"k": True}}
        url = f"{api_client.configuration.host}/api/v1/namespaces/{namespace}/configmaps"
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {cluster.token}"}
        response = api_client.call_api("POST", url, header_params=headers, body=body)
        response.read()
        assert response.status == 400
        assert json.loads(response.data)["message"] == (
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go '
            "struct field ConfigMap.data of type string")
        with pytest.raises(ApiException) as missing:
            k8s_client.CoreV1Api(api_client).read_namespaced_config_map("typed", namespace)
        assert missing.value.status == 404
    finally:
        api_client.close()


def test_kubectl_patch_meets_the_decode_and_the_unknown_fields_of_one_walk(kubectl: Any, namespace: str) -> None:
    # The patched object is decoded and its unknown fields found in one walk: a wrong type wins over an
    # unknown field (422 showing the patched object, unknown field and all); an unknown field alone is
    # a warning (kubectl patch sends no fieldValidation: Warn), and it is not stored.
    kubectl("create", "configmap", "walked", "-n", namespace, "--from-literal=k=v")
    typed = kubectl("patch", "configmap", "walked", "-n", namespace, "--type=merge",
                    "-p", '{"bogus":1,"data":{"k":true}}', check=False)
    assert typed.returncode == 1
    assert '\\"bogus\\":1' in typed.stderr
    assert typed.stderr.strip().endswith(
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string")
    warn = kubectl("patch", "configmap", "walked", "-n", namespace, "--type=merge",
                   "-p", '{"bogus":1,"data":{"k":"w"}}')
    assert warn.stderr.strip() == 'Warning: unknown field "bogus"'
    stored = json.loads(kubectl("get", "configmap", "walked", "-n", namespace, "-o", "json").stdout)
    assert stored["data"] == {"k": "w"} and "bogus" not in stored
