"""ServiceAccounts as a real cluster has them, seen with kubectl against ``kubeloop up``.

``kubeloop up`` runs the ServiceAccount controller and the root CA publisher in its controller manager,
and the ServiceAccount admission plugin in its API server; ``--no-controllers`` disables that plugin, as
envtest's API server does (controller-runtime pkg/internal/testing/controlplane/apiserver.go).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
READY = re.compile(r"kubeloop is ready at (https://\S+)")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def start(tmp_path_factory: pytest.TempPathFactory, *flags: str) -> Iterator[tuple[dict[str, str], Path]]:
    data = tmp_path_factory.mktemp("up")
    proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(data), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if READY.search(line):
                break
        else:
            raise AssertionError("kubeloop up did not become ready:\n" + "".join(lines))
        home = tmp_path_factory.mktemp("home")
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        environ.update(HOME=str(home), KUBECONFIG=str(data / "kubeconfig"))
        yield environ, data
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    yield from start(tmp_path_factory)


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=120,
                            check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def poll(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run kubectl until it succeeds (the controllers act within moments of a namespace's creation)."""
    deadline = time.monotonic() + 60
    while True:
        result = kubectl(env, *args, check=False)
        if result.returncode == 0:
            return result
        assert time.monotonic() < deadline, result.stderr
        time.sleep(0.2)


def test_kubectl_get_sa_in_a_new_namespace_shows_default(cluster: tuple[dict[str, str], Path]) -> None:
    env, _ = cluster
    kubectl(env, "create", "namespace", "team-a")
    out = poll(env, "get", "sa", "default", "-n", "team-a").stdout
    assert re.search(r"^default\s+0\s+\S+$", out.splitlines()[1]), out


def test_kube_root_ca_config_map_holds_the_ca_kubeconfig_trusts(cluster: tuple[dict[str, str], Path]) -> None:
    env, data = cluster
    kubectl(env, "create", "namespace", "team-b")
    poll(env, "get", "cm", "kube-root-ca.crt", "-n", "team-b")
    cm = json.loads(kubectl(env, "get", "cm", "kube-root-ca.crt", "-n", "team-b", "-o", "json").stdout)
    assert cm["data"] == {"ca.crt": (data / "pki" / "ca.crt").read_text()}
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
    raw = kubectl(env, "config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")

    assert base64.b64decode(raw.stdout).decode() == cm["data"]["ca.crt"]
    assert "ca.crt: |" in kubectl(env, "get", "cm", "kube-root-ca.crt", "-n", "team-b", "-o", "yaml").stdout


def test_a_pods_yaml_shows_its_service_account_and_token_volume(cluster: tuple[dict[str, str], Path]) -> None:
    env, _ = cluster
    kubectl(env, "create", "namespace", "team-c")
    # Created right after the namespace: the admission plugin waits for the controller's `default`.
    kubectl(env, "create", "-n", "team-c", "-f", "-", stdin=json.dumps(POD))
    pod: dict[str, Any] = json.loads(kubectl(env, "get", "pod", "web", "-n", "team-c", "-o", "json").stdout)
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[a-z0-9]{5}", volume["name"])
    assert volume["projected"]["defaultMode"] == 420
    assert volume["projected"]["sources"][0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert spec["containers"][0]["volumeMounts"] == [
        {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": volume["name"], "readOnly": True}]
    yaml_out = kubectl(env, "get", "pod", "web", "-n", "team-c", "-o", "yaml").stdout
    assert f"name: {volume['name']}" in yaml_out and "expirationSeconds: 3607" in yaml_out


def test_a_pod_naming_a_missing_service_account_is_refused(cluster: tuple[dict[str, str], Path]) -> None:
    env, _ = cluster
    body = {**POD, "spec": {**POD["spec"], "serviceAccountName": "ghost"}}
    refused = kubectl(env, "create", "-n", "default", "-f", "-", stdin=json.dumps(body), check=False)
    assert refused.returncode == 1
    assert ('Error from server (Forbidden): error when creating "STDIN": pods "web" is forbidden: error looking up '
            'service account default/ghost: serviceaccount "ghost" not found') in refused.stderr


def test_without_controllers_pods_are_stored_as_sent(tmp_path_factory: pytest.TempPathFactory) -> None:
    for env, _ in start(tmp_path_factory, "--no-controllers"):
        kubectl(env, "create", "-n", "default", "-f", "-", stdin=json.dumps(POD))
        spec = json.loads(kubectl(env, "get", "pod", "web", "-o", "json").stdout)["spec"]
        assert "serviceAccountName" not in spec and "volumes" not in spec
        assert "No resources found" in kubectl(env, "get", "sa", "-n", "default").stderr


def test_kubectl_create_token_gives_a_token_the_server_accepts(cluster: tuple[dict[str, str], Path]) -> None:
    env, _ = cluster
    poll(env, "get", "sa", "default", "-n", "default")
    token = kubectl(env, "create", "token", "default", "-n", "default").stdout.strip()  # a protobuf TokenRequest
    whoami = kubectl(env, "--token", token, "auth", "whoami", "-o", "json")
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:default"
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
    refused = kubectl(env, "create", "token", "default", "--duration", "5m", check=False)
    assert refused.returncode == 1
    assert ('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: '
            "may not specify a duration less than 10 minutes") in refused.stderr
    forged = kubectl(env, "--token", token[:-4] + "AAAA", "auth", "whoami", check=False)
    assert forged.returncode == 1 and "Unauthorized" in forged.stderr
