"""PriorityClass (scheduling.k8s.io/v1) through the HTTP API: the kind, its validation, the system classes.

Upstream: k/k ``pkg/apis/scheduling/validation/validation.go``, ``pkg/apis/scheduling/v1/{defaults,helpers}.go``,
``pkg/registry/scheduling/priorityclass/{strategy.go,storage/storage.go}``,
``pkg/registry/scheduling/rest/storage_scheduling.go`` (the post-start hook), ``pkg/printers/internalversion``
(the table) and ``plugin/pkg/admission/priority`` (one global default).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

BASE = "/apis/scheduling.k8s.io/v1/priorityclasses"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def pc(name: str, value: int = 1000, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **fields}


async def create(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await client.post(BASE, json=body)


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in response.json()["details"]["causes"]]


async def test_the_two_system_classes_exist_at_start(client: httpx.AsyncClient) -> None:
    listed = (await client.get(BASE)).json()
    assert listed["kind"] == "PriorityClassList"
    classes = {o["metadata"]["name"]: o for o in listed["items"]}
    assert sorted(classes) == ["system-cluster-critical", "system-node-critical"]
    node = classes["system-node-critical"]
    assert node["value"] == 2000001000 and classes["system-cluster-critical"]["value"] == 2000000000
    assert node["preemptionPolicy"] == "PreemptLowerPriority" and "globalDefault" not in node
    assert node["description"] == "Used for system critical pods that must not be moved from their current node."
    assert node["metadata"]["generation"] == 1


async def test_a_deleted_system_class_comes_back_on_the_next_start(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "db")
    try:
        first = create_app(store=store, clock=FakeClock(), rng=random.Random(1))
        await first.startup()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=first), base_url="http://k") as client:
            # deletecollection is not refused: upstream's DeleteCollection skips REST.Delete's check.
            assert (await client.delete(BASE)).status_code == 200
            assert (await client.get(BASE)).json()["items"] == []
        await first.shutdown()
        second = create_app(store=store, clock=FakeClock(), rng=random.Random(2))
        await second.startup()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=second), base_url="http://k") as client:
            names = [o["metadata"]["name"] for o in (await client.get(BASE)).json()["items"]]
        await second.shutdown()
        assert names == ["system-cluster-critical", "system-node-critical"]
    finally:
        await store.close()


async def test_deleting_a_system_class_by_name_is_forbidden(client: httpx.AsyncClient) -> None:
    r = await client.delete(f"{BASE}/system-node-critical")
    assert r.status_code == 403
    assert r.json()["message"] == ('priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: '
                                   "this is a system priority class and cannot be deleted")
    assert r.json()["details"] == {"name": "system-node-critical", "group": "scheduling.k8s.io",
                                   "kind": "priorityclasses"}
    assert (await client.delete(f"{BASE}/system-node-critical", params={"dryRun": "All"})).status_code == 403
    assert (await client.get(f"{BASE}/system-node-critical")).status_code == 200


async def test_create_defaults_preemption_policy_and_sets_generation_one(client: httpx.AsyncClient) -> None:
    r = await create(client, pc("high", 1000, description="for the important"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["preemptionPolicy"] == "PreemptLowerPriority"
    assert body["metadata"]["generation"] == 1 and body["value"] == 1000
    assert (await create(client, pc("never", 5, preemptionPolicy="Never"))).json()["preemptionPolicy"] == "Never"
    # value is an int32 Go always writes: a class created without one has value 0.
    r = await create(client, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                              "metadata": {"name": "zero"}})
    assert r.status_code == 201 and r.json()["value"] == 0


async def test_a_user_class_may_not_exceed_one_billion(client: httpx.AsyncClient) -> None:
    assert (await create(client, pc("top", 1_000_000_000))).status_code == 201
    r = await create(client, pc("over", 1_000_000_001))
    assert r.status_code == 422
    assert r.json()["message"] == ('PriorityClass.scheduling.k8s.io "over" is invalid: value: Forbidden: '
                                   "maximum allowed value of a user defined priority is 1000000000")
    assert causes(r) == [("FieldValueForbidden", "value",
                          "Forbidden: maximum allowed value of a user defined priority is 1000000000")]
    # Negative values are any user's to take.
    assert (await create(client, pc("low", -5))).status_code == 201


@pytest.mark.parametrize(("body", "reason"), [
    (pc("system-mine", 10), "system-mine is not a known system priority class"),
    (pc("system-node-critical", 7), "value of system-node-critical PriorityClass must be 2000001000"),
    (pc("system-cluster-critical", 2000000000, globalDefault=True),
     "globalDefault of system-cluster-critical PriorityClass must be false"),
])
async def test_system_prefix_is_reserved_for_the_known_system_classes(
    client: httpx.AsyncClient, body: dict[str, Any], reason: str
) -> None:
    r = await create(client, body)
    assert r.status_code == 422
    assert causes(r) == [("FieldValueForbidden", "metadata.name",
                          "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
                          f"error: {reason}")]


async def test_an_existing_system_class_written_exactly_is_already_there(client: httpx.AsyncClient) -> None:
    assert (await create(client, pc("system-cluster-critical", 2000000000))).status_code == 409


async def test_unknown_preemption_policy_is_not_supported(client: httpx.AsyncClient) -> None:
    r = await create(client, pc("odd", 1, preemptionPolicy="Sometimes"))
    assert r.status_code == 422
    assert causes(r) == [("FieldValueNotSupported", "preemptionPolicy",
                          'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"')]


async def test_value_and_preemption_policy_are_immutable(client: httpx.AsyncClient) -> None:
    stored = (await create(client, pc("mid", 100))).json()
    stored["value"] = 101
    stored["preemptionPolicy"] = "Never"
    r = await client.put(f"{BASE}/mid", json=stored)
    assert r.status_code == 422
    assert r.json()["message"] == ('PriorityClass.scheduling.k8s.io "mid" is invalid: [value: Forbidden: may not be '
                                   'changed in an update., preemptionPolicy: Invalid value: "Never": field is immutable]')
    # description and labels may change; generation stays 1 (no spec to track).
    r = await client.patch(f"{BASE}/mid", json={"description": "middle", "metadata": {"labels": {"a": "b"}}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert r.json()["description"] == "middle" and r.json()["metadata"]["generation"] == 1
    # A PUT without preemptionPolicy is defaulted again, so it is not a change.
    body = r.json()
    body.pop("preemptionPolicy")
    assert (await client.put(f"{BASE}/mid", json=body)).status_code == 200


async def test_only_one_class_may_be_the_global_default(client: httpx.AsyncClient) -> None:
    assert (await create(client, pc("first", 10, globalDefault=True))).status_code == 201
    r = await create(client, pc("second", 20, globalDefault=True))
    assert r.status_code == 403
    assert r.json()["message"] == ('priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first '
                                   "is already marked as default. Only one default can exist")
    assert r.json()["details"] == {"name": "second", "group": "scheduling.k8s.io", "kind": "priorityclasses"}
    # Marking another class default by update is refused too; updating the default itself is not.
    other = (await create(client, pc("other", 30))).json()
    other["globalDefault"] = True
    assert (await client.put(f"{BASE}/other", json=other)).status_code == 403
    first = (await client.get(f"{BASE}/first")).json()
    first["description"] = "the default"
    assert (await client.put(f"{BASE}/first", json=first)).status_code == 200
    # Once the default is gone (or no longer default), another may take its place.
    assert (await client.delete(f"{BASE}/first")).status_code == 200
    assert (await create(client, pc("second", 20, globalDefault=True))).status_code == 201


async def test_short_name_and_discovery(client: httpx.AsyncClient) -> None:
    group = (await client.get("/apis/scheduling.k8s.io")).json()
    assert group["preferredVersion"] == {"groupVersion": "scheduling.k8s.io/v1", "version": "v1"}
    resources = (await client.get("/apis/scheduling.k8s.io/v1")).json()["resources"]
    assert [(r["name"], r["kind"], r["namespaced"], r["shortNames"]) for r in resources] == [
        ("priorityclasses", "PriorityClass", False, ["pc"])]
    assert sorted(resources[0]["verbs"]) == ["create", "delete", "deletecollection", "get", "list", "patch",
                                             "update", "watch"]


async def test_table_columns_are_upstreams(client: httpx.AsyncClient, clock: FakeClock) -> None:
    await create(client, pc("batch", -10, preemptionPolicy="Never", globalDefault=True))
    await clock.advance(90)
    table = (await client.get(BASE, headers={"accept": TABLE})).json()
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0), ("Value", "integer", 0), ("Global-Default", "boolean", 0), ("Age", "string", 0),
        ("PreemptionPolicy", "string", 0)]
    rows = {row["cells"][0]: row["cells"] for row in table["rows"]}
    assert rows["batch"] == ["batch", -10, True, "90s", "Never"]
    assert rows["system-node-critical"] == ["system-node-critical", 2000001000, False, "90s", "PreemptLowerPriority"]


async def test_the_apps_startup_is_idempotent(app: App, client: httpx.AsyncClient) -> None:
    await app.shutdown()
    await app.startup()
    assert len((await client.get(BASE)).json()["items"]) == 2


@pytest.mark.parametrize(("field", "value", "says"), [
    ("value", "high", "string into Go struct field PriorityClass.value of type int32"),
    ("value", 1.5, "number 1.5 into Go struct field PriorityClass.value of type int32"),
    ("value", 3_000_000_000, "number 3000000000 into Go struct field PriorityClass.value of type int32"),
    ("value", True, "bool into Go struct field PriorityClass.value of type int32"),
    ("globalDefault", "yes", "string into Go struct field PriorityClass.globalDefault of type bool"),
    ("description", 5, "number into Go struct field PriorityClass.description of type string"),
    ("preemptionPolicy", ["Never"], "array into Go struct field PriorityClass.preemptionPolicy of type "
                                    "v1.PreemptionPolicy"),
])
async def test_a_field_of_the_wrong_type_is_a_bad_request(
    client: httpx.AsyncClient, field: str, value: Any, says: str
) -> None:
    body = pc("typed", 1)
    body[field] = value
    r = await create(client, body)
    assert r.status_code == 400
    assert r.json()["message"] == ('PriorityClass in version "v1" cannot be handled as a PriorityClass: '
                                   f"json: cannot unmarshal {says}")
    # The same body as an update (PUT) is refused the same way.
    stored = (await create(client, pc("typed", 1))).json()
    stored[field] = value
    r = await client.put(f"{BASE}/typed", json=stored)
    assert r.status_code == 400 and r.json()["message"].endswith(says)
