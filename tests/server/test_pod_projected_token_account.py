"""A pod's projected service account token needs a ``serviceAccountName``, as upstream 1.32 checks it.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` ``validatePodMetadataAndSpec`` (called by
``ValidatePodCreate`` and ``ValidatePodUpdate``, pod-only: templates are not checked): while
``spec.serviceAccountName`` is empty, every ``projected.sources[j].serviceAccountToken`` is
``Forbidden: must not be specified when serviceAccountName is not set``. The ServiceAccount admission
plugin names ``default`` before validation, so the rule refuses pods only where that plugin is off (the
``client`` fixture's app disables it, as envtest's kube-apiserver does). The deprecated
``serviceAccount`` alias counts (``Convert_v1_PodSpec_To_core_PodSpec`` copies it into the name).
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import SystemClock
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

from ._uvicorn import serve

PODS = "/api/v1/namespaces/default/pods"
MESSAGE = "Forbidden: must not be specified when serviceAccountName is not set"


def token_pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    volumes = [
        {"name": "cfg", "configMap": {"name": "c"}},
        {"name": "mixed", "projected": {"sources": [
            {"configMap": {"name": "c"}},
            {"serviceAccountToken": {"path": "token", "audience": "vault"}},
        ]}},
        {"name": "two", "projected": {"sources": [{"serviceAccountToken": {"path": "a"}},
                                                  {"serviceAccountToken": {"path": "b"}}]}},
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "volumes": volumes, **spec}}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Pod"
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_a_projected_token_without_a_service_account_is_forbidden(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=token_pod())
    assert causes(r) == [
        ("FieldValueForbidden", "spec.volumes[1].projected.sources[1].serviceAccountToken", MESSAGE),
        ("FieldValueForbidden", "spec.volumes[2].projected.sources[0].serviceAccountToken", MESSAGE),
        ("FieldValueForbidden", "spec.volumes[2].projected.sources[1].serviceAccountToken", MESSAGE),
    ]
    assert r.json()["message"].startswith(
        'Pod "p" is invalid: [spec.volumes[1].projected.sources[1].serviceAccountToken: ' + MESSAGE)
    # The store is unchanged.
    assert (await client.get(f"{PODS}/p")).status_code == 404
    # An empty name is no name.
    assert len(causes(await client.post(PODS, json=token_pod(serviceAccountName="")))) == 3


async def test_the_rule_comes_after_the_spec_and_before_the_create_rules(client: httpx.AsyncClient) -> None:
    # validatePodMetadataAndSpec: ValidatePodSpec first, then this rule; ValidatePodCreate's own
    # ephemeral-container rule after both.
    body = token_pod(restartPolicy="Sometimes", ephemeralContainers=[{"name": "e", "image": "busybox"}])
    body["spec"]["volumes"] = body["spec"]["volumes"][1:2]
    fields = [f for _, f, _ in causes(await client.post(PODS, json=body))]
    assert fields == ["spec.restartPolicy", "spec.volumes[0].projected.sources[1].serviceAccountToken",
                      "spec.ephemeralContainers"]


@pytest.mark.parametrize("spec", [{"serviceAccountName": "robot"}, {"serviceAccount": "robot"}])
async def test_a_named_account_lets_the_token_through(client: httpx.AsyncClient, spec: dict[str, str]) -> None:
    r = await client.post(PODS, json=token_pod(**spec))
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["serviceAccountName"] == "robot"


async def test_templates_are_not_checked(client: httpx.AsyncClient) -> None:
    # The rule is pod-only: a Deployment's template may leave the account to the pods' admission.
    template = token_pod()
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}}, "spec": template["spec"]}}}
    r = await client.post("/apis/apps/v1/namespaces/default/deployments", json=deployment)
    assert r.status_code == 201, r.text


async def test_an_update_is_checked_too(client: httpx.AsyncClient, store: SqliteStore) -> None:
    # A pod stored without the account (the plugin was off, or another writer) fails every update.
    body = token_pod("old")
    body["metadata"].update(namespace="default", uid="0b5b1d6e-8d51-4a53-9c32-00000000000a",
                            creationTimestamp="2026-01-01T00:00:00Z")
    body["spec"].update(restartPolicy="Always", dnsPolicy="ClusterFirst", terminationGracePeriodSeconds=30,
                        schedulerName="default-scheduler")
    body["spec"]["containers"][0].update(terminationMessagePath="/dev/termination-log",
                                         terminationMessagePolicy="File", imagePullPolicy="Always")

    def render(revision: int) -> bytes:
        body["metadata"]["resourceVersion"] = str(revision)
        return json.dumps(body).encode()

    await store.create("/registry/core/pods/default/old", render)
    r = await client.patch(f"{PODS}/old", json={"metadata": {"labels": {"a": "b"}}},
                           headers={"content-type": "application/merge-patch+json"})
    assert [f for _, f, _ in causes(r)] == [
        "spec.volumes[1].projected.sources[1].serviceAccountToken",
        "spec.volumes[2].projected.sources[0].serviceAccountToken",
        "spec.volumes[2].projected.sources[1].serviceAccountToken",
    ]
    assert "labels" not in (await client.get(f"{PODS}/old")).json()["metadata"]


async def test_the_service_account_plugin_names_default_first(store: SqliteStore) -> None:
    # With the plugin on (kube-apiserver's default), the pod gets "default" and passes validation.
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(5))
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop") as c:
            # The account exists (the ServiceAccounts controller is not running here to make it).
            made = await c.post("/api/v1/namespaces/default/serviceaccounts", json={"metadata": {"name": "default"}})
            assert made.status_code == 201, made.text
            r = await c.post(PODS, json=token_pod())
    finally:
        await app.shutdown()
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["serviceAccountName"] == "default"


def _create_with_client(url: str) -> tuple[int, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        try:
            k8s.CoreV1Api(api_client).create_namespaced_pod("default", token_pod("by-client"))
        except ApiException as error:
            return error.status, json.loads(error.body)
    return 201, None


async def test_the_kubernetes_client_is_refused_with_upstreams_status(store: SqliteStore) -> None:
    app: App = create_app(store=store, clock=SystemClock(), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    async with serve(app) as url:
        status, body = await asyncio.to_thread(_create_with_client, url)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueForbidden", "message": MESSAGE,
        "field": "spec.volumes[1].projected.sources[1].serviceAccountToken"}
