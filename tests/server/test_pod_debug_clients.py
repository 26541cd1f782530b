"""Real clients on the debugging paths, served as ``kubeloop apiserver`` serves (TLS, kubeloop's uvicorn protocol):
the ``kubernetes`` package's ephemeralcontainers calls (generated from upstream's OpenAPI: the operation ids this
server's documents carry), and ``kubectl exec`` refused by a ValidatingAdmissionPolicy on CONNECT."""

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

from .test_pod_logs_clients import cluster

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


async def test_the_kubernetes_package_adds_an_ephemeral_container(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:

        def debug() -> tuple[list[str], str, int, str]:
            configuration = k8s.Configuration(host=c.url)
            configuration.ssl_ca_cert = c.ca
            with k8s.ApiClient(configuration) as api_client:
                core = k8s.CoreV1Api(api_client)
                body = {"spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox",
                                                          "targetContainerName": "app", "stdin": True}]}}
                patched = core.patch_namespaced_pod_ephemeralcontainers("web-1", "default", body)
                read = core.read_namespaced_pod_ephemeralcontainers("web-1", "default")
                names = [e.name for e in read.spec.ephemeral_containers]
                policy = patched.spec.ephemeral_containers[0].image_pull_policy
                try:  # an existing one may not change
                    changed = {"spec": {"ephemeralContainers": [{"name": "debugger", "image": "alpine"}]}}
                    core.patch_namespaced_pod_ephemeralcontainers("web-1", "default", changed)
                except ApiException as error:
                    return names, policy, int(error.status), json.loads(error.body)["details"]["causes"][0]["field"]
                return names, policy, 0, ""

        assert await asyncio.to_thread(debug) == (
            ["debugger"], "Always", 422, "spec.ephemeralContainers.debugger")


@needs_kubectl
async def test_kubectl_exec_refused_by_a_policy_on_connect(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:
        rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CONNECT"], "resources": ["pods/exec"]}
        policy: dict[str, Any] = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-shell"},
            "spec": {"matchConstraints": {"resourceRules": [rule]},
                     "validations": [{"expression": "!object.command.exists(c, c in ['sh', 'bash'])",
                                      "message": "no interactive shells", "reason": "Forbidden"}]}}
        binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                   "metadata": {"name": "no-shell"}, "spec": {"policyName": "no-shell", "validationActions": ["Deny"]}}
        assert (await c.admin.post(f"{ADMISSION}/validatingadmissionpolicies", json=policy)).status_code == 201
        assert (await c.admin.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding)).status_code == 201
        code, _, err = await c.kubectl.run("exec", "web-1", "-c", "app", "--", "sh", ok=False)
        assert code == 1 and err.strip() == (
            'Error from server (Forbidden): pods "web-1" is forbidden: ValidatingAdmissionPolicy \'no-shell\' with '
            "binding 'no-shell' denied request: no interactive shells")
        # Any other command passes admission and meets the simulation's answer.
        code, _, err = await c.kubectl.run("exec", "web-1", "-c", "app", "--", "ls", ok=False)
        assert code == 1 and err.strip().endswith('cannot exec in container "app" of pod "web-1": simulated '
                                                  "containers run no process")
