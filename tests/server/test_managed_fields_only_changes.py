"""An update that changes only managedFields is a write; one that changes only their times is not.

Upstream: the update and patch handlers run ``fieldmanager.IgnoreManagedFieldsTimestampsTransformer``
(k8s.io/apiserver ``pkg/endpoints/handlers/fieldmanager/equality.go``): when the managedFields are equal
modulo each entry's ``time`` and the rest of the object is equal, the old times are put back and the
storage's ``GuaranteedUpdate`` writes nothing (same bytes). Any other managedFields difference changes the
stored bytes: a second applier of the same values is recorded as a co-owner ("Field managers can share
ownership of a field by applying the same value", the server-side apply documentation), with a new
resourceVersion.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.testing import FakeClock

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def configmap(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": data}


def owners(obj: dict[str, Any], field: str) -> list[str]:
    return sorted(e["manager"] for e in obj["metadata"]["managedFields"]
                  if field in e.get("fieldsV1", {}).get("f:data", {}))


async def apply(client: httpx.AsyncClient, path: str, manager: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.patch(f"{path}?fieldManager={manager}", content=orjson.dumps(body), headers=APPLY)
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


async def test_a_second_applier_of_the_same_values_becomes_a_co_owner(client: httpx.AsyncClient,
                                                                      clock: FakeClock) -> None:
    first = await apply(client, f"{CM}/shared", "one", configmap(a="1"))
    await clock.advance(5)
    second = await apply(client, f"{CM}/shared", "two", configmap(a="1"))
    assert second["data"] == {"a": "1"}
    assert owners(second, "f:a") == ["one", "two"]
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert (await client.get(f"{CM}/shared")).json() == second
    # Now neither can take the value alone: "one" changing it conflicts with "two".
    r = await client.patch(f"{CM}/shared?fieldManager=one", content=orjson.dumps(configmap(a="2")), headers=APPLY)
    assert r.status_code == 409, r.text
    assert 'conflict with "two"' in r.json()["message"]


async def test_reapplying_the_same_values_later_writes_nothing(client: httpx.AsyncClient, clock: FakeClock) -> None:
    first = await apply(client, f"{CM}/shared", "one", configmap(a="1"))
    await clock.advance(5)
    again = await apply(client, f"{CM}/shared", "one", configmap(a="1"))
    assert again == first  # the entry's time is the first apply's, the resourceVersion unchanged


async def test_an_applier_giving_up_a_value_zero_it_alone_set_is_a_write(client: httpx.AsyncClient) -> None:
    # paused: false is a value zero (not stored), but the applier owns it; applying without it gives it up.
    def deployment(**spec: Any) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"app": "d"}}, **spec, "template": {
                "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}

    def applied_spec(obj: dict[str, Any]) -> dict[str, Any]:
        (entry,) = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "m"]
        return dict(entry["fieldsV1"]["f:spec"])

    with_zero = await apply(client, f"{DEPLOYMENTS}/d", "m", deployment(paused=False))
    assert "paused" not in with_zero["spec"] and "f:paused" in applied_spec(with_zero)
    without = await apply(client, f"{DEPLOYMENTS}/d", "m", deployment())
    assert "f:paused" not in applied_spec(without)
    assert int(without["metadata"]["resourceVersion"]) > int(with_zero["metadata"]["resourceVersion"])
    assert (await client.get(f"{DEPLOYMENTS}/d")).json() == without


async def test_a_put_of_the_object_as_read_is_still_no_write(client: httpx.AsyncClient, clock: FakeClock) -> None:
    created = (await client.post(f"{CM}?fieldManager=writer", content=orjson.dumps(configmap(a="1")))).json()
    await clock.advance(5)
    same = await client.put(f"{CM}/shared?fieldManager=writer", content=orjson.dumps(created))
    assert same.status_code == 200 and same.json() == created
    # A PUT by another manager that changes nothing gives it nothing to own: no write either.
    other = await client.put(f"{CM}/shared?fieldManager=other", content=orjson.dumps(created))
    assert other.status_code == 200 and other.json() == created
