"""Watchers of one resource share what they render from an event without mixing their options.

A Table watch (``kubectl get -w``) renders each event once per distinct rendering (kind, version,
``includeObject``, printer columns, first event or not) and a custom resource watched at a version it
is not stored at is converted once per event and version; every watcher still gets exactly the bytes
it would get alone: its own ``includeObject``, its own columns, its own version, column definitions on
its own first event only (apiserver ``handlers/watch.go`` with ``handlers/response.go``'s Table
conversion; apiextensions ``customresource_handler.go`` serving each version).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.server import App, _tables, _watch
from kubeloop.testing import FakeClock

from ._asgi import Stream, stream

CM = "/api/v1/namespaces/default/configmaps"
MERGE = {"content-type": "application/merge-patch+json"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _table(include: str | None = None) -> tuple[str, dict[str, str]]:
    return ("" if include is None else f"&includeObject={include}"), {"accept": TABLE}


async def _rv_after_setup(client: httpx.AsyncClient) -> str:
    r = await client.post(CM, json={"metadata": {"name": "before"}, "data": {"k": "v"}})
    assert r.status_code == 201
    return str(r.json()["metadata"]["resourceVersion"])


async def _write(client: httpx.AsyncClient, clock: FakeClock, watchers: list[Stream]) -> list[list[dict[str, Any]]]:
    """Create ``a`` (two keys); once every watcher has its event, let 90 s pass, patch ``a`` (one key) and
    delete it. Each watcher's three events."""
    created = await client.post(CM, json={"metadata": {"name": "a", "labels": {"app": "x"}},
                                          "data": {"k": "v", "l": "w"}})
    assert created.status_code == 201
    firsts = [await watcher.events(1) for watcher in watchers]  # rendered before the clock moves
    await clock.advance(90)
    patched = await client.patch(f"{CM}/a", content=b'{"data":{"l":null}}', headers=MERGE)
    assert patched.status_code == 200
    deleted = await client.delete(f"{CM}/a")
    assert deleted.status_code == 200
    return [first + await watcher.events(2) for first, watcher in zip(firsts, watchers, strict=True)]


async def test_table_watchers_with_different_include_object_each_get_their_own_rows(
    app: App, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rv = await _rv_after_setup(client)
    modes: list[str | None] = [None, "Object", "None", "Metadata", "Object"]
    async with contextlib.AsyncExitStack() as stack:
        plain = await stack.enter_async_context(stream(app, CM, f"watch=1&resourceVersion={rv}"))
        tables: list[Stream] = []
        for mode in modes:
            query, headers = _table(mode)
            tables.append(await stack.enter_async_context(
                stream(app, CM, f"watch=1&resourceVersion={rv}{query}", headers=headers)))
        plain_events, *got = await _write(client, clock, [plain, *tables])
        objects = [event["object"] for event in plain_events]
    assert [o["metadata"]["name"] for o in objects] == ["a", "a", "a"]
    for mode, events in zip(modes, got, strict=True):
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        for i, (event, obj) in enumerate(zip(events, objects, strict=True)):
            table = event["object"]
            assert table["kind"] == "Table"
            assert table["metadata"] == {"resourceVersion": obj["metadata"]["resourceVersion"]}
            if i == 0:  # the column definitions come with each watcher's first event only
                assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
            else:
                assert table["columnDefinitions"] is None
            (row,) = table["rows"]
            # the patch came 90 s after the create, on the fake clock: Age counts from the create
            assert row["cells"] == [["a", 2, "0s"], ["a", 1, "90s"], ["a", 1, "90s"]][i]
            if mode == "Object":
                assert row["object"] == obj
            elif mode == "None":
                assert row["object"] is None
            else:
                assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                         "metadata": obj["metadata"]}
    assert got[1] == got[4] and got[0] == got[3], "equal options, equal events"


async def test_a_watcher_joining_later_gets_the_column_definitions_on_its_own_first_event(
    app: App, client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rv = await _rv_after_setup(client)
    _, headers = _table()
    async with stream(app, CM, f"watch=1&resourceVersion={rv}", headers=headers) as early:
        r = await client.post(CM, json={"metadata": {"name": "one"}})
        assert r.status_code == 201
        assert (await early.events(1))[0]["object"]["columnDefinitions"] is not None
        rv_one = r.json()["metadata"]["resourceVersion"]
        async with stream(app, CM, f"watch=1&resourceVersion={rv_one}", headers=headers) as late:
            assert (await client.post(CM, json={"metadata": {"name": "two"}})).status_code == 201
            (from_early,) = await early.events(1)
            (from_late,) = await late.events(1)
    assert from_early["object"]["columnDefinitions"] is None
    assert [c["name"] for c in from_late["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert from_early["object"]["rows"] == from_late["object"]["rows"]


async def test_table_watchers_with_equal_options_render_each_event_once(
    app: App, client: httpx.AsyncClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _tables.table_for
    rendered: list[str] = []

    def counting(info: Any, objects: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        rendered.append(objects[0]["metadata"]["name"])
        return real(info, objects, **options)

    monkeypatch.setattr(_tables, "table_for", counting)
    rv = await _rv_after_setup(client)
    query, headers = _table("Object")
    async with contextlib.AsyncExitStack() as stack:
        watchers = [await stack.enter_async_context(
            stream(app, CM, f"watch=1&resourceVersion={rv}{query}", headers=headers)) for _ in range(6)]
        other = await stack.enter_async_context(
            stream(app, CM, f"watch=1&resourceVersion={rv}", headers=headers))  # includeObject=Metadata
        *seen, _ = await _write(client, clock, [*watchers, other])
    assert all(s == seen[0] for s in seen)
    # one rendering per event for the six, one per event for the other
    assert sorted(rendered) == ["a"] * 6


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
             "versions": [
                 {"name": "v1", "served": True, "storage": True,
                  "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                                                                "color": {"type": "string"}}}}}}},
                 {"name": "v2", "served": True, "storage": False,
                  "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}],
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                                                                "color": {"type": "string"}}}}}}},
             ]},
}  # fmt: skip
V1 = "/apis/example.com/v1/namespaces/default/gizmos"
V2 = "/apis/example.com/v2/namespaces/default/gizmos"


async def _establish(app: App, client: httpx.AsyncClient) -> None:
    r = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=copy.deepcopy(CRD))
    assert r.status_code == 201, r.text
    for _ in range(300):
        if app.kinds.get("example.com", "v2", "gizmos") is not None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("CRD never served")


async def _gizmo_writes(client: httpx.AsyncClient) -> None:
    r = await client.post(V1, json={"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"},
                                    "spec": {"size": 1, "color": "red"}})
    assert r.status_code == 201, r.text
    r = await client.patch(f"{V2}/g", content=b'{"spec":{"size":2}}', headers=MERGE)
    assert r.status_code == 200, r.text
    assert (await client.delete(f"{V2}/g")).status_code == 200


async def test_custom_resource_watchers_at_two_versions_each_get_their_version(
    app: App, client: httpx.AsyncClient
) -> None:
    await _establish(app, client)
    rv = (await client.get(V1)).json()["metadata"]["resourceVersion"]
    query = f"watch=1&resourceVersion={rv}"
    async with contextlib.AsyncExitStack() as stack:
        v1 = [await stack.enter_async_context(stream(app, V1, query)) for _ in range(2)]
        v2 = [await stack.enter_async_context(stream(app, V2, query)) for _ in range(2)]
        v1_table = await stack.enter_async_context(stream(app, V1, query, headers={"accept": TABLE}))
        v2_table = await stack.enter_async_context(stream(app, V2, query + "&includeObject=Object",
                                                          headers={"accept": TABLE}))
        await _gizmo_writes(client)
        at_v1 = [await w.lines(3) for w in v1]
        at_v2 = [await w.lines(3) for w in v2]
        table_v1 = await v1_table.events(3)
        table_v2 = await v2_table.events(3)
    assert at_v1[0] == at_v1[1] and at_v2[0] == at_v2[1]
    for lines, version in ((at_v1[0], "v1"), (at_v2[0], "v2")):
        events = [orjson.loads(line) for line in lines]
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        assert {e["object"]["apiVersion"] for e in events} == {f"example.com/{version}"}
        assert [e["object"]["spec"]["size"] for e in events] == [1, 2, 2]
    # the same objects but for apiVersion
    for one, two in zip(at_v1[0], at_v2[0], strict=True):
        first, second = orjson.loads(one), orjson.loads(two)
        first["object"].pop("apiVersion")
        second["object"].pop("apiVersion")
        assert first == second
    # each Table watcher has its version's printer columns, and v2's rows carry v2 objects
    assert [c["name"] for c in table_v1[0]["object"]["columnDefinitions"]] == ["Name", "Size"]
    assert [c["name"] for c in table_v2[0]["object"]["columnDefinitions"]] == ["Name", "Color"]
    assert [e["object"]["rows"][0]["cells"] for e in table_v1] == [["g", 1], ["g", 2], ["g", 2]]
    assert [e["object"]["rows"][0]["cells"] for e in table_v2] == [["g", "red"]] * 3
    assert {e["object"]["rows"][0]["object"]["apiVersion"] for e in table_v2} == {"example.com/v2"}
    assert table_v1[0]["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


async def test_a_custom_resource_event_is_converted_once_per_version_whatever_the_watchers(
    app: App, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _establish(app, client)
    real: Callable[[Any, bytes], bytes] = _watch.served_value
    conversions: list[str] = []

    def counting(info: Any, value: bytes) -> bytes:
        conversions.append(info.version)
        return real(info, value)

    monkeypatch.setattr(_watch, "served_value", counting)
    rv = (await client.get(V1)).json()["metadata"]["resourceVersion"]
    query = f"watch=1&resourceVersion={rv}"
    async with contextlib.AsyncExitStack() as stack:
        v1 = [await stack.enter_async_context(stream(app, V1, query)) for _ in range(3)]
        v2 = [await stack.enter_async_context(stream(app, V2, query)) for _ in range(5)]
        await _gizmo_writes(client)
        for w in (*v1, *v2):
            assert len(await w.lines(3)) == 3
    # stored at v1: v1 watchers serve the stored bytes; v2's five share one conversion per event
    assert conversions == ["v2"] * 3
