"""kubectl and the official ``kubernetes`` client print a refused pod's security causes as upstream's.

kubectl prints ``The Pod "p" is invalid:`` and one ``* field: message`` line per cause; the official
client raises an ``ApiException`` whose body is the 422 Status with those causes. Upstream: k/k
``pkg/apis/core/validation/validation.go`` (1.32) ``ValidateSecurityContext`` and
``validatePodSpecSecurityContext``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.server import App

from ._uvicorn import kubectl_for, serve

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"securityContext": {"runAsUser": -1},
                "containers": [{"name": "app", "image": "nginx:1.25",
                                "securityContext": {"privileged": True, "allowPrivilegeEscalation": False}}]}}
CONTAINER_CONTEXT = '{"allowPrivilegeEscalation": false, "privileged": true}'
CAUSES = [
    ("spec.containers[0].securityContext",
     f"Invalid value: {CONTAINER_CONTEXT}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
    ("spec.securityContext.runAsUser", "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
]


def _create_with_kubernetes_client(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        try:
            k8s.CoreV1Api(api_client).create_namespaced_pod("default", POD)
        except ApiException as exc:
            assert exc.status == 422
            status: dict[str, Any] = json.loads(exc.body)
            return status
    raise AssertionError("the pod was created")


async def test_the_kubernetes_client_gets_the_causes(real_app: App) -> None:
    async with serve(real_app) as url:
        status = await asyncio.to_thread(_create_with_kubernetes_client, url)
    assert (status["reason"], status["code"]) == ("Invalid", 422)
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == CAUSES
    assert status["message"] == 'Pod "p" is invalid: [' + ", ".join(f"{f}: {m}" for f, m in CAUSES) + "]"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_prints_each_cause(real_app: App, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(POD))
    async with kubectl_for(real_app, tmp_path) as kubectl:
        code, out, err = await kubectl.run("create", "-f", str(manifest), ok=False)
    assert code == 1, out
    assert err.splitlines() == ['The Pod "p" is invalid: ', *(f"* {f}: {m}" for f, m in CAUSES)]
