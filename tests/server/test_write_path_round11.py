"""Request path round 11: a create reads the clock once for its managedFields entry and its
creationTimestamp, and an update that changes nothing but managedFields is told apart without copying
either object; what clients see is as before (docs/performance.md "Request path round 11")."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client as k8s

from kubeloop.api import SystemClock, format_time
from kubeloop.server import App, create_app
from kubeloop.server._rest import _same_but_managed_times
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

from ._uvicorn import serve

CM = "/api/v1/namespaces/default/configmaps"


async def test_a_create_stamps_its_managed_fields_and_creation_time_from_the_clock(
        client: httpx.AsyncClient, clock: FakeClock) -> None:
    for step in range(3):
        await clock.advance(61.5)
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"t{step}"}, "data": {"k": "v"}}
        r = await client.post(CM, content=orjson.dumps(body))
        assert r.status_code == 201, r.text
        meta = r.json()["metadata"]
        assert meta["creationTimestamp"] == format_time(clock.now())
        assert meta["managedFields"][0]["time"] == meta["creationTimestamp"]
        stored = (await client.get(f"{CM}/t{step}")).json()
        assert stored == r.json()


async def test_an_update_that_changes_no_field_keeps_the_resource_version(client: httpx.AsyncClient,
                                                                           clock: FakeClock) -> None:
    r = await client.post(CM, content=orjson.dumps({"metadata": {"name": "same"}, "data": {"k": "v"}}))
    created = r.json()
    await clock.advance(5)
    # The same object again (its managedFields included): nothing is written, the answer is the stored object.
    again = await client.put(f"{CM}/same", content=orjson.dumps(created))
    assert again.status_code == 200
    assert again.json() == created
    # Without its managedFields: still the same object, and the stored entries stay as they were.
    bare = {**created, "metadata": {k: v for k, v in created["metadata"].items() if k != "managedFields"}}
    again = await client.put(f"{CM}/same", content=orjson.dumps(bare))
    assert again.json() == created
    # A changed value is an update: a new resourceVersion, and the entry's time moves to now.
    changed = {**bare, "data": {"k": "w"}}
    updated = (await client.put(f"{CM}/same", content=orjson.dumps(changed))).json()
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["metadata"]["managedFields"][0]["time"] == format_time(clock.now())
    # A changed immutable field is refused with upstream's message and the store keeps the object.
    moved = {**updated, "metadata": {**updated["metadata"], "uid": "other"}}
    refused = await client.put(f"{CM}/same", content=orjson.dumps(moved))
    assert refused.status_code == 422
    assert refused.json()["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "other": field is immutable',
         "field": "metadata.uid"}]
    assert (await client.get(f"{CM}/same")).json() == updated


_LEAF = st.none() | st.integers(0, 2) | st.sampled_from(["", "a", "b"])
_MANAGED = st.lists(st.fixed_dictionaries({"manager": st.sampled_from(["m", "n"])}, optional={
    "time": st.sampled_from(["2026-11-30T00:00:00Z", "2026-11-30T00:00:05Z"])}) | _LEAF, max_size=2) | st.none()
_META = st.fixed_dictionaries({}, optional={"name": _LEAF, "uid": _LEAF, "labels": st.dictionaries(
    st.sampled_from(["a", "b"]), _LEAF, max_size=2), "managedFields": _MANAGED}) | st.none() | st.sampled_from(
    ["", "a"]) | st.lists(_LEAF, max_size=1)  # (metadata an integer fails both ways alike: not a write's)
_OBJECT = st.fixed_dictionaries({}, optional={"kind": _LEAF, "metadata": _META, "data": st.dictionaries(
    st.sampled_from(["a", "b"]), _LEAF, max_size=2), "spec": _LEAF})


def _times_cleared(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with each managedFields entry's time set to None: what upstream's equality compares
    (fieldmanager/equality.go: ``ManagedFieldsEntry`` equal with ``Time = nil`` on both sides); a null
    managedFields is an absent one (a nil slice in Go)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta and meta["managedFields"] is None:  # nil either way
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    if not isinstance(meta, dict) or not isinstance(meta.get("managedFields"), list):
        return obj
    entries = [{**e, "time": None} if isinstance(e, dict) else e for e in meta["managedFields"]]
    return {**obj, "metadata": {**meta, "managedFields": entries}}


@settings(max_examples=500, deadline=None)
@given(_OBJECT, _OBJECT, st.data())
def test_an_update_is_unchanged_when_only_managed_fields_times_differ(new: dict[str, Any], old: dict[str, Any],
                                                                     data: st.DataObject) -> None:
    # Upstream's IgnoreManagedFieldsTimestampsTransformer: equal modulo the entries' times is no write;
    # any other managedFields difference is one. (Before, managedFields were ignored altogether, so a
    # second applier of the same values was never recorded as a co-owner.)
    if data.draw(st.booleans()):  # often the same object apart from its managedFields, as most no-op PUTs are
        meta = old.get("metadata")
        new = {**old, "metadata": {**meta, "managedFields": data.draw(_MANAGED)} if isinstance(meta, dict) else meta}
    assert _same_but_managed_times(new, old) == (_times_cleared(new) == _times_cleared(old))


@pytest.fixture
async def real_app(store: SqliteStore) -> App:
    """The kubernetes client times its requests with the wall clock, so the server uses it too."""
    return create_app(store=store, clock=SystemClock())


def _kubernetes_flow(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        created = core.create_namespaced_config_map(
            "default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="r11"), data={"k": "v"}))
        same = core.replace_namespaced_config_map("r11", "default", created)
        created.data = {"k": "w"}
        changed = core.replace_namespaced_config_map("r11", "default", created)
        return {"created": created, "same": same, "changed": changed}


async def test_the_kubernetes_client_sees_one_time_per_create_and_no_op_updates(real_app: App) -> None:
    async with serve(real_app) as url:
        out = await asyncio.to_thread(_kubernetes_flow, url)
    created, same, changed = out["created"].metadata, out["same"].metadata, out["changed"].metadata
    assert created.managed_fields[0].time == created.creation_timestamp
    assert created.managed_fields[0].manager == "OpenAPI-Generator"
    assert same.resource_version == created.resource_version
    assert int(changed.resource_version) > int(created.resource_version)
    assert changed.creation_timestamp == created.creation_timestamp


async def test_an_update_checks_its_finalizers_only_when_it_has_some(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, content=orjson.dumps({"metadata": {"name": "fin"}}))).json()
    bad = {**created, "metadata": {**created["metadata"], "finalizers": ["example.com/ok", "not a name!"]}}
    refused = await client.put(f"{CM}/fin", content=orjson.dumps(bad))
    assert refused.status_code == 422
    assert [c["field"] for c in refused.json()["details"]["causes"]] == ["metadata.finalizers"]
    assert (await client.get(f"{CM}/fin")).json() == created
    empty = {**created, "metadata": {**created["metadata"], "finalizers": []}}
    kept = await client.put(f"{CM}/fin", content=orjson.dumps(empty))
    assert kept.status_code == 200
    assert kept.json() == created  # an empty list is omitted (omitempty): the object did not change
