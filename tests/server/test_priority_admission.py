"""The Priority admission plugin on pods, through the HTTP API (upstream plugin/pkg/admission/priority/admission.go)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.server import App, NamespaceLifecycle, Priority, create_app
from kubeloop.server._admission import AdmissionAttributes
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

PODS_URL = "/api/v1/namespaces/default/pods"
CLASSES_URL = "/apis/scheduling.k8s.io/v1/priorityclasses"
PODS: ResourceInfo = KindRegistry().by_kind("", "Pod")  # type: ignore[assignment]


def pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


async def make_class(client: httpx.AsyncClient, name: str, value: int, **fields: Any) -> None:
    r = await client.post(CLASSES_URL, json={"metadata": {"name": name}, "value": value, **fields})
    assert r.status_code == 201, r.text


def scheduling(body: dict[str, Any]) -> tuple[Any, Any, Any]:
    spec = body["spec"]
    return spec.get("priorityClassName"), spec.get("priority"), spec.get("preemptionPolicy")


async def test_pod_of_a_class_gets_its_value_and_preemption_policy(client: httpx.AsyncClient) -> None:
    await make_class(client, "batch", 500, preemptionPolicy="Never")
    r = await client.post(PODS_URL, json=pod(priorityClassName="batch"))
    assert r.status_code == 201, r.text
    assert scheduling(r.json()) == ("batch", 500, "Never")
    assert scheduling((await client.get(f"{PODS_URL}/web")).json()) == ("batch", 500, "Never")


async def test_pod_without_class_or_default_gets_zero(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS_URL, json=pod(priorityClassName=""))
    assert scheduling(r.json()) == (None, 0, "PreemptLowerPriority")


async def test_pod_without_class_gets_the_global_default_and_its_name(client: httpx.AsyncClient) -> None:
    await make_class(client, "standard", 100, globalDefault=True, preemptionPolicy="Never")
    assert scheduling((await client.post(PODS_URL, json=pod())).json()) == ("standard", 100, "Never")
    # A class created or changed just before a pod is seen by it (not an eventually consistent cache).
    await client.delete(f"{CLASSES_URL}/standard")
    assert scheduling((await client.post(PODS_URL, json=pod("after"))).json()) == (None, 0, "PreemptLowerPriority")


async def test_system_classes_resolve_in_any_namespace(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS_URL, json=pod(priorityClassName="system-node-critical"))
    assert scheduling(r.json()) == ("system-node-critical", 2000001000, "PreemptLowerPriority")


async def test_unknown_class_is_forbidden(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS_URL, json=pod(priorityClassName="missing"))
    assert r.status_code == 403
    assert r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == 'pods "web" is forbidden: no PriorityClass with name missing was found'
    assert r.json()["details"] == {"name": "web", "kind": "pods"}
    # Before name generation the message names the generateName (admission.NewForbidden).
    generated = pod(priorityClassName="missing")
    generated["metadata"] = {"generateName": "web-"}
    r = await client.post(PODS_URL, json=generated)
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "web-" is forbidden: no PriorityClass with name missing was found'


async def test_priority_in_the_body_must_be_what_the_class_gives(client: httpx.AsyncClient) -> None:
    await make_class(client, "high", 1000)
    r = await client.post(PODS_URL, json=pod(priorityClassName="high", priority=7))
    assert r.status_code == 403
    assert r.json()["message"] == (
        'pods "web" is forbidden: the integer value of priority (7) must not be provided in pod spec; '
        "priority admission controller computed 1000 from the given PriorityClass name")
    r = await client.post(PODS_URL, json=pod(priority=3))
    assert r.json()["message"].endswith("the integer value of priority (3) must not be provided in pod spec; "
                                        "priority admission controller computed 0 from the given PriorityClass name")
    # The same value is accepted: a manifest exported from a cluster can be created again.
    r = await client.post(PODS_URL, json=pod(priorityClassName="high", priority=1000))
    assert r.status_code == 201, r.text


async def test_preemption_policy_in_the_body_must_be_what_the_class_gives(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS_URL, json=pod(preemptionPolicy="Never"))
    assert r.status_code == 403
    assert r.json()["message"] == (
        'pods "web" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
    assert (await client.post(PODS_URL, json=pod(preemptionPolicy="PreemptLowerPriority"))).status_code == 201


async def test_dry_run_resolves_too(client: httpx.AsyncClient) -> None:
    await make_class(client, "high", 1000)
    r = await client.post(PODS_URL, params={"dryRun": "All"}, json=pod(priorityClassName="high"))
    assert r.status_code == 201
    assert scheduling(r.json()) == ("high", 1000, "PreemptLowerPriority")


async def test_put_without_priority_keeps_the_stored_one(client: httpx.AsyncClient) -> None:
    await make_class(client, "high", 1000)
    stored = (await client.post(PODS_URL, json=pod(priorityClassName="high"))).json()
    stored["spec"].pop("priority")
    stored["spec"].pop("preemptionPolicy")
    stored["metadata"]["labels"] = {"tier": "web"}
    r = await client.put(f"{PODS_URL}/web", json=stored)
    assert r.status_code == 200, r.text
    assert scheduling(r.json()) == ("high", 1000, "PreemptLowerPriority")


async def test_priority_and_class_name_are_immutable_on_update(client: httpx.AsyncClient) -> None:
    # ValidatePodUpdate allows only a few spec fields to change; these are not among them.
    await make_class(client, "high", 1000)
    await make_class(client, "low", 1)
    await client.post(PODS_URL, json=pod(priorityClassName="high"))
    for patch in ({"spec": {"priority": 5}}, {"spec": {"priorityClassName": "low"}},
                  {"spec": {"preemptionPolicy": "Never"}}):
        r = await client.patch(f"{PODS_URL}/web", json=patch, headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 422, (patch, r.text)
        assert "pod updates may not change fields other than" in r.json()["message"]


async def test_status_updates_are_not_looked_at(client: httpx.AsyncClient) -> None:
    await client.post(PODS_URL, json=pod())
    r = await client.patch(f"{PODS_URL}/web/status", json={"status": {"message": "hi"}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert scheduling(r.json()) == (None, 0, "PreemptLowerPriority")


async def test_pod_templates_are_not_resolved(client: httpx.AsyncClient) -> None:
    # Only pods are admitted; a Deployment's template keeps what it says (its pods are resolved).
    r = await client.post("/apis/apps/v1/namespaces/default/deployments", json={
        "metadata": {"name": "d"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"priorityClassName": "missing",
                                       "containers": [{"name": "app", "image": "nginx"}]}}}})
    assert r.status_code == 201, r.text
    template = r.json()["spec"]["template"]["spec"]
    assert template["priorityClassName"] == "missing" and "priority" not in template


@pytest.fixture
async def bare(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A server whose chain has no Priority plugin: pods keep what they say, as upstream with it disabled."""
    store = await SqliteStore.open(tmp_path / "db")
    app: App = create_app(store=store, clock=FakeClock(), rng=random.Random(5), admission=[NamespaceLifecycle(store)])
    await app.startup()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
        yield client
    await app.shutdown()
    await store.close()


async def test_without_the_plugin_priority_is_not_defaulted(bare: httpx.AsyncClient) -> None:
    body = (await bare.post(PODS_URL, json=pod(priorityClassName="missing"))).json()
    assert scheduling(body) == ("missing", None, None)


async def test_plugin_reads_the_classes_once_then_admits_without_waiting(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "db")
    try:
        plugin = Priority(store)
        attrs = AdmissionAttributes("CREATE", PODS, "default", "p")
        obj = pod("p")
        # Nothing read yet: the first pod waits for the read.
        pending = plugin.mutate(attrs, obj, None)
        assert pending is not None
        await pending
        assert scheduling(obj) == (None, 0, "PreemptLowerPriority")
        # From then on a pod is admitted without waiting.
        again = pod("q")
        assert plugin.mutate(attrs, again, None) is None
        assert scheduling(again) == (None, 0, "PreemptLowerPriority")
    finally:
        await store.close()
