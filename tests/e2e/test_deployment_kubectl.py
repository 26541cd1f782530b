"""kubectl against ``kubeloop up``: create deployment, scale, rollout status / restart / undo.

No kubelet runs in this test: it plays one, marking pods Running and Ready through ``pods/status``.
If the controller manager of this build does not run the Deployment controller yet, the test skips
(no ReplicaSet appears), rather than failing on a missing integration.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _ready_all(cluster: Any, namespace: str) -> None:
    with cluster.http() as http:
        pods = http.get(f"/api/v1/namespaces/{namespace}/pods").json().get("items") or []
        for pod in pods:
            conds = (pod.get("status") or {}).get("conditions") or []
            if pod["metadata"].get("deletionTimestamp") or any(c.get("type") == "Ready" for c in conds):
                continue
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            body = {"status": {"phase": "Running",
                               "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}}
            http.patch(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/status",
                       content=json.dumps(body), headers={"Content-Type": "application/merge-patch+json"})


def _rolled_out(kubectl: Any, cluster: Any, namespace: str, tries: int = 40) -> str:
    for _ in range(tries):
        _ready_all(cluster, namespace)
        result = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=1s", check=False)
        if result.returncode == 0:
            return str(result.stdout)
    raise AssertionError(f"rollout did not finish: {result.stdout} {result.stderr}")


def _jsonpath(kubectl: Any, namespace: str, kind: str, path: str) -> str:
    return str(kubectl("get", kind, "-n", namespace, "-o", f"jsonpath={path}").stdout)


def test_kubectl_deployment_lifecycle(kubectl: Any, cluster: Any, namespace: str, tmp_path: Any) -> None:
    # `kubectl create deployment` posts protobuf; render it client-side and create it from the file.
    manifest = kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "-n", namespace,
                       "--dry-run=client", "-o", "json").stdout
    (tmp_path / "web.json").write_text(manifest)
    kubectl("create", "-f", str(tmp_path / "web.json"))
    for _ in range(100):
        if _jsonpath(kubectl, namespace, "rs", "{.items[*].metadata.name}"):
            break
        time.sleep(0.1)
    else:
        pytest.skip("the controller manager does not run the Deployment controller in this build")
    assert 'deployment "web" successfully rolled out' in _rolled_out(kubectl, cluster, namespace)

    kubectl("scale", "deployment/web", "--replicas=4", "-n", namespace)
    _rolled_out(kubectl, cluster, namespace)
    assert _jsonpath(kubectl, namespace, "deployment/web", "{.status.readyReplicas}") == "4"

    kubectl("rollout", "restart", "deployment/web", "-n", namespace)
    _rolled_out(kubectl, cluster, namespace)
    revisions = _jsonpath(kubectl, namespace, "rs", "{.items[*].metadata.annotations.deployment\\.kubernetes\\.io/revision}")
    assert sorted(revisions.split()) == ["1", "2"]
    assert _jsonpath(kubectl, namespace, "deployment/web", "{.spec.template.metadata.annotations}") != ""

    kubectl("rollout", "undo", "deployment/web", "-n", namespace)
    _rolled_out(kubectl, cluster, namespace)
    assert _jsonpath(kubectl, namespace, "deployment/web",
                     "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}") == "3"
    assert "restartedAt" not in _jsonpath(kubectl, namespace, "deployment/web", "{.spec.template.metadata}")
    assert len(_jsonpath(kubectl, namespace, "rs", "{.items[*].metadata.name}").split()) == 2
