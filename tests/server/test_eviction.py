"""pods/eviction and pods/binding in the API server (eviction.go and BindingREST semantics).

The test plays the disruption controller by writing the budget's status itself, so each rule of the
eviction REST is exercised on its own against the real server and store.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.api import BUILTIN_RESOURCES, BadRequest, Conflict, Invalid, NotFound, TooManyRequests
from kubeloop.client import Client
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

R = {(r.group, r.plural): r for r in BUILTIN_RESOURCES}
PODS = R[("", "pods")]
PDBS = R[("policy", "poddisruptionbudgets")]


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[Client, Any]]:
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=clock, rng=random.Random(1), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    client = Client.from_asgi(app, clock=clock)
    try:
        yield client, app
    finally:
        await client.close()
        await app.shutdown()
        await store.close()


async def running_pod(client: Client, name: str, *, ready: bool = True, phase: str = "Running") -> dict[str, Any]:
    await client.create(PODS, {"metadata": {"name": name, "labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await client.create(PODS, binding(name, "node-a"), subresource="binding")
    current = await client.get(PODS, name)
    status = {**current["status"], "phase": phase, "conditions": [
        *current["status"]["conditions"], {"type": "Ready", "status": "True" if ready else "False"}]}
    return await client.update(PODS, {**current, "status": status}, subresource="status")


def binding(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}


def eviction(name: str, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if options:
        body["deleteOptions"] = options
    return body


async def budget(client: Client, *, allowed: int, healthy: int = 2, desired: int = 1, observed: bool = True,
                 name: str = "web") -> dict[str, Any]:
    pdb = await client.create(PDBS, {"metadata": {"name": name},
                                     "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": "web"}}}})
    status = {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired,
              "expectedPods": healthy, "observedGeneration": 1 if observed else 0}
    return await client.update(PDBS, {**pdb, "status": status}, subresource="status")


async def test_binding_sets_node_name_and_pod_scheduled(api: tuple[Client, Any]) -> None:
    client, _ = api
    await client.create(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    status = await client.create(PODS, binding("p", "node-a"), subresource="binding")
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    pod = await client.get(PODS, "p")
    assert pod["spec"]["nodeName"] == "node-a"
    assert [c["type"] for c in pod["status"]["conditions"] if c["status"] == "True"] == ["PodScheduled"]
    with pytest.raises(Conflict, match='pod p is already assigned to node "node-a"'):
        await client.create(PODS, binding("p", "node-b"), subresource="binding")


async def test_binding_name_must_match_the_pod(api: tuple[Client, Any]) -> None:
    client, _ = api
    await client.create(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    with pytest.raises(BadRequest, match="name in URL does not match name in Binding object"):
        await client._json("POST", "/api/v1/namespaces/default/pods/p/binding", body=binding("q", "node-a"))


async def test_binding_copies_annotations_and_dry_run_stores_nothing(api: tuple[Client, Any]) -> None:
    client, _ = api
    created = await client.create(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    body = binding("p", "node-a")
    body["metadata"]["annotations"] = {"scheduler": "mine"}
    await client._json("POST", "/api/v1/namespaces/default/pods/p/binding?dryRun=All", body=body)
    assert await client.get(PODS, "p") == created
    await client.create(PODS, body, subresource="binding")
    pod = await client.get(PODS, "p")
    assert pod["metadata"]["annotations"] == {"scheduler": "mine"}
    assert pod["spec"]["nodeName"] == "node-a"


async def test_binding_refusals(api: tuple[Client, Any]) -> None:
    client, _ = api
    with pytest.raises(NotFound, match='pods "ghost" not found'):
        await client.create(PODS, binding("ghost", "node-a"), subresource="binding")
    pod = await client.create(PODS, {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "x"}], "schedulingGates": [{"name": "wait"}]}})
    with pytest.raises(Conflict, match=r"pod p has non-empty \.spec\.schedulingGates"):
        await client.create(PODS, binding("p", "node-a"), subresource="binding")
    stale = binding("p", "node-a")
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(Conflict, match=r"the ResourceVersion in the precondition \(1\) does not match"):
        await client.create(PODS, stale, subresource="binding")
    other = binding("p", "node-a")
    other["metadata"]["uid"] = "other"
    with pytest.raises(Conflict, match=r"the UID in the precondition \(other\) does not match"):
        await client.create(PODS, other, subresource="binding")
    with pytest.raises(Invalid):
        await client.create(PODS, {**binding("p", "node-a"), "target": {"kind": "Pod", "name": "x"}},
                            subresource="binding")
    assert await client.get(PODS, "p") == pod


async def test_eviction_is_refused_with_429_when_the_budget_allows_no_disruption(api: tuple[Client, Any]) -> None:
    client, _ = api
    await running_pod(client, "web-1")
    await budget(client, allowed=0, healthy=1, desired=1)
    with pytest.raises(TooManyRequests) as refused:
        await client.create(PODS, eviction("web-1"), subresource="eviction")
    assert refused.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert refused.value.causes == [{"reason": "DisruptionBudget",
                                     "message": "The disruption budget web needs 1 healthy pods and has 1 currently"}]
    assert (await client.get(PODS, "web-1"))["metadata"].get("deletionTimestamp") is None


async def test_allowed_eviction_decrements_the_budget_and_deletes_the_pod(api: tuple[Client, Any]) -> None:
    client, _ = api
    await running_pod(client, "web-1")
    await running_pod(client, "web-2")
    await budget(client, allowed=1)
    status = await client.create(PODS, eviction("web-1"), subresource="eviction")
    assert status["status"] == "Success" and status["code"] == 201
    pdb = (await client.get(PDBS, "web"))["status"]
    assert pdb["disruptionsAllowed"] == 0
    assert list(pdb["disruptedPods"]) == ["web-1"]
    assert [(c["type"], c["status"], c["reason"]) for c in pdb["conditions"]] == [
        ("DisruptionAllowed", "False", "InsufficientPods")]
    evicted = await client.get(PODS, "web-1")  # graceful: terminating, with the DisruptionTarget condition
    assert evicted["metadata"]["deletionTimestamp"]
    target = [c for c in evicted["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["reason"] == "EvictionByEvictionAPI"
    with pytest.raises(TooManyRequests):
        await client.create(PODS, eviction("web-2"), subresource="eviction")


async def test_stale_budget_status_answers_429_with_retry_after(api: tuple[Client, Any]) -> None:
    client, app = api
    await running_pod(client, "web-1")
    await budget(client, allowed=5, observed=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://x") as http:
        answer = await http.post("/api/v1/namespaces/default/pods/web-1/eviction", json=eviction("web-1"))
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "10"
    assert answer.json()["details"]["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server.")


async def test_pods_that_disrupt_nothing_are_deleted_without_the_budget(api: tuple[Client, Any]) -> None:
    client, _ = api
    await running_pod(client, "done", phase="Succeeded", ready=False)
    await client.create(PODS, {"metadata": {"name": "pending", "labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await budget(client, allowed=0, healthy=0, desired=3)
    for name in ("done", "pending"):
        await client.create(PODS, eviction(name), subresource="eviction")
        with pytest.raises(NotFound):
            await client.get(PODS, name)
    assert (await client.get(PDBS, "web"))["status"]["disruptionsAllowed"] == 0


async def test_unready_pod_is_evicted_without_decrement_when_the_budget_is_met(api: tuple[Client, Any]) -> None:
    client, _ = api
    await running_pod(client, "sick", ready=False)
    await budget(client, allowed=0, healthy=2, desired=2)
    await client.create(PODS, eviction("sick", gracePeriodSeconds=0), subresource="eviction")
    with pytest.raises(NotFound):
        await client.get(PODS, "sick")
    assert "disruptedPods" not in (await client.get(PDBS, "web"))["status"]


async def test_a_pod_under_two_budgets_cannot_be_evicted(api: tuple[Client, Any]) -> None:
    client, app = api
    await running_pod(client, "web-1")
    await budget(client, allowed=1, name="a")
    await budget(client, allowed=1, name="b")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://x") as http:
        answer = await http.post("/api/v1/namespaces/default/pods/web-1/eviction", json=eviction("web-1"))
    assert answer.status_code == 500
    assert answer.json()["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction "
                                        "subresource does not support.")


async def test_dry_run_eviction_changes_nothing(api: tuple[Client, Any]) -> None:
    client, _ = api
    await running_pod(client, "web-1")
    await budget(client, allowed=1)
    await client.create(PODS, eviction("web-1", dryRun=["All"]), subresource="eviction")
    assert (await client.get(PDBS, "web"))["status"]["disruptionsAllowed"] == 1
    assert (await client.get(PODS, "web-1"))["metadata"].get("deletionTimestamp") is None


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def protobuf_eviction(name: str, *, grace: int, dry_run: bool) -> bytes:
    """An Eviction as client-go's protobuf codec writes it (policy/v1 generated.proto numbers)."""
    options = _field(1, grace) + (_field(5, "All") if dry_run else b"")
    raw = _field(1, _field(1, name) + _field(3, "default")) + _field(2, options)
    return b"k8s\x00" + _field(1, _field(1, "policy/v1") + _field(2, "Eviction")) + _field(2, raw)


async def test_protobuf_eviction_is_decoded_with_its_delete_options(api: tuple[Client, Any]) -> None:
    client, app = api
    await running_pod(client, "web-1")
    await budget(client, allowed=1)
    headers = {"content-type": "application/vnd.kubernetes.protobuf", "accept": "application/json"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://x") as http:
        url = "/api/v1/namespaces/default/pods/web-1/eviction"
        dry = await http.post(url, content=protobuf_eviction("web-1", grace=0, dry_run=True), headers=headers)
        assert dry.status_code == 201, dry.text
        assert (await client.get(PDBS, "web"))["status"]["disruptionsAllowed"] == 1  # dryRun came through
        real = await http.post(url, content=protobuf_eviction("web-1", grace=0, dry_run=False), headers=headers)
        assert real.status_code == 201, real.text
        assert real.json()["status"] == "Success"
    with pytest.raises(NotFound):  # gracePeriodSeconds=0 came through: deleted at once
        await client.get(PODS, "web-1")
    assert (await client.get(PDBS, "web"))["status"]["disruptionsAllowed"] == 0


async def test_protobuf_eviction_of_another_pod_is_a_bad_request(api: tuple[Client, Any]) -> None:
    client, app = api
    await running_pod(client, "web-1")
    headers = {"content-type": "application/vnd.kubernetes.protobuf"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://x") as http:
        answer = await http.post("/api/v1/namespaces/default/pods/web-1/eviction",
                                 content=protobuf_eviction("web-2", grace=0, dry_run=False), headers=headers)
    assert answer.status_code == 400
    assert answer.json()["message"] == "name in URL does not match name in Eviction object"


async def test_eviction_preconditions_that_do_not_hold_are_a_conflict_naming_the_pod(api: tuple[Client, Any]) -> None:
    client, app = api
    pod = await running_pod(client, "web-1", phase="Pending", ready=False)
    url = "/api/v1/namespaces/default/pods/web-1/eviction"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://x") as http:
        wrong_uid = await http.post(url, json=eviction("web-1", preconditions={"uid": "other"}))
        stale_rv = await http.post(url, json=eviction("web-1", preconditions={"resourceVersion": "1"}))
    assert wrong_uid.status_code == 409
    assert wrong_uid.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "web-1": the UID in the precondition (other) does not match the UID '
        f"in record ({pod['metadata']['uid']}). The object might have been deleted and then recreated")
    assert wrong_uid.json()["details"] == {"name": "web-1", "kind": "Pod"}
    assert stale_rv.status_code == 409
    assert stale_rv.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "web-1": the ResourceVersion in the precondition (1) does not match '
        f"the ResourceVersion in record ({pod['metadata']['resourceVersion']}). The object might have been modified")
    kept = await client.get(PODS, "web-1")  # neither the DisruptionTarget condition nor a deletion was written
    assert kept["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
