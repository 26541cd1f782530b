"""Real clients meet admission webhooks: kubectl and the official ``kubernetes`` package.

The envtest workflow: install a configuration whose ``clientConfig.url`` points at a local webhook over
TLS (with its ``caBundle``), then write objects and get the webhook's answers. Upstream:
k8s.io/apiserver ``pkg/admission/plugin/webhook`` (release-1.32).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import SystemClock
from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore

from ._uvicorn import serve
from ._webhooks import configuration, patch_response, webhook, webhook_server


@pytest.fixture
async def real_app(store: SqliteStore) -> App:
    return create_app(store=store, clock=SystemClock())


def _kubectl(url: str, home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--server", url, *args], capture_output=True, text=True, input=stdin,
                          env={"HOME": str(home), "KUBECONFIG": str(home / "none"), "PATH": "/usr/bin:/bin:/usr/local/bin"},
                          timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_kubectl_applies_a_configuration_then_create_is_refused_with_the_webhooks_message(
        real_app: App, tmp_path: Path) -> None:
    async with webhook_server(tmp_path / "hook") as served, serve(real_app) as url:
        def answer(request: dict[str, Any]) -> dict[str, Any]:
            if served.hook.paths[-1].startswith("/mutate"):  # the path of the call being answered
                return patch_response([{"op": "add", "path": "/metadata/labels", "value": {"stamped": "true"}}])
            if request["name"].startswith("bad"):
                return {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                                     "message": "names starting with bad are refused"}}
            return {"allowed": True}
        served.hook.answer = answer
        mutating = configuration("MutatingWebhookConfiguration", "stamp",
                                 webhook("stamp.example.com", served.client_config("/mutate")))
        validating = configuration("ValidatingWebhookConfiguration", "refuse-bad",
                                   webhook("refuse.example.com", served.client_config("/validate")))
        manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": [mutating, validating]})
        applied = await asyncio.to_thread(_kubectl, url, tmp_path, "apply", "-f", "-", stdin=manifest)
        assert applied.returncode == 0, applied.stderr
        assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/stamp created" in applied.stdout
        assert "validatingwebhookconfiguration.admissionregistration.k8s.io/refuse-bad created" in applied.stdout
        made = await asyncio.to_thread(_kubectl, url, tmp_path, "create", "configmap", "good", "-o", "json")
        refused = await asyncio.to_thread(_kubectl, url, tmp_path, "create", "configmap", "bad-one")
        listed = await asyncio.to_thread(_kubectl, url, tmp_path, "get", "validatingwebhookconfigurations")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["metadata"]["labels"] == {"stamped": "true"}
    assert refused.returncode != 0
    assert refused.stderr.strip() == ('error: failed to create configmap: admission webhook "refuse.example.com" '
                                      "denied the request: names starting with bad are refused")
    assert listed.stdout.split("\n")[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert listed.stdout.split("\n")[1].split()[:2] == ["refuse-bad", "1"]


def _flow(url: str, client_config: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        admission = k8s.AdmissionregistrationV1Api(api_client)
        core = k8s.CoreV1Api(api_client)
        hook = k8s.V1ValidatingWebhook(
            name="refuse.example.com", admission_review_versions=["v1"], side_effects="None",
            client_config=k8s.AdmissionregistrationV1WebhookClientConfig(url=client_config["url"],
                                                                          ca_bundle=client_config["caBundle"]),
            rules=[k8s.V1RuleWithOperations(operations=["CREATE"], api_groups=[""], api_versions=["v1"],
                                            resources=["configmaps"])])
        made = admission.create_validating_webhook_configuration(
            k8s.V1ValidatingWebhookConfiguration(metadata=k8s.V1ObjectMeta(name="refuse"), webhooks=[hook]))
        out["defaults"] = (made.webhooks[0].failure_policy, made.webhooks[0].timeout_seconds,
                           made.webhooks[0].match_policy)
        try:
            core.create_namespaced_config_map("default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="bad-x")))
        except ApiException as exc:
            out["refused"] = (exc.status, json.loads(exc.body)["message"])
        core.create_namespaced_config_map("default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="fine")))
        out["listed"] = [c.metadata.name for c in admission.list_validating_webhook_configuration().items]
        try:
            admission.create_validating_webhook_configuration(k8s.V1ValidatingWebhookConfiguration(
                metadata=k8s.V1ObjectMeta(name="bad-config"), webhooks=[k8s.V1ValidatingWebhook(
                    name="x", admission_review_versions=["v1"], side_effects="None",
                    client_config=k8s.AdmissionregistrationV1WebhookClientConfig(url="https://h.example.com"),
                    timeout_seconds=60)]))
        except ApiException as exc:
            out["invalid"] = (exc.status, json.loads(exc.body)["message"])
    return out


async def test_the_kubernetes_client_installs_a_configuration_and_sees_the_denial(real_app: App, tmp_path: Path) -> None:
    answer = lambda request: ({"allowed": False, "status": {"code": 403, "message": "refused"}}  # noqa: E731
                              if request["name"].startswith("bad") else {"allowed": True})
    async with webhook_server(tmp_path / "hook", answer) as served, serve(real_app) as url:
        out = await asyncio.to_thread(_flow, url, served.client_config("/validate"))
    assert out["defaults"] == ("Fail", 10, "Equivalent")
    assert out["refused"] == (403, 'admission webhook "refuse.example.com" denied the request: refused')
    assert out["listed"] == ["refuse"]
    assert out["invalid"][0] == 422
    assert out["invalid"][1] == (
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad-config" is invalid: [webhooks[0].name: '
        'Invalid value: "x": should be a domain with at least three segments separated by dots, '
        "webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds]")
