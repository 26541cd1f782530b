"""watch: synthetic ADDED, resume from a resourceVersion, event types, selectors, 410, timeouts."""

from __future__ import annotations

import asyncio
import json

import httpx

from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App
from kubeloop.testing import FakeClock

from ._asgi import stream

CM = "/api/v1/namespaces/default/configmaps"


async def sleeping(clock: FakeClock) -> None:
    """Wait until the watch has armed its timer on the fake clock."""
    async with asyncio.timeout(5):
        while clock.sleepers == 0:
            await asyncio.sleep(0)


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}}, "data": data}


async def test_watch_without_resource_version_sends_added_for_existing_then_changes(
    app: App, client: httpx.AsyncClient
) -> None:
    await client.post(CM, json=configmap("a"))
    async with stream(app, CM, "watch=true") as s:
        assert s.status == 200 and s.headers["content-type"] == "application/json"
        [first] = await s.events(1)
        assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "a"
        await client.patch(f"{CM}/a", content=b'{"data":{"x":"1"}}',
                           headers={"content-type": "application/merge-patch+json"})
        await client.post(CM, json=configmap("b"))
        await client.delete(f"{CM}/a")
        events = await s.events(3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a"),
    ]


async def test_deleted_event_carries_last_state_with_the_deletion_revision(app: App, client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a", x="1"))).json()
    async with stream(app, CM, f"watch=1&resourceVersion={created['metadata']['resourceVersion']}") as s:
        await client.delete(f"{CM}/a")
        [event] = await s.events(1)
    assert event["type"] == "DELETED"
    assert event["object"]["data"] == {"x": "1"}
    assert int(event["object"]["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_watch_from_resource_version_sends_only_later_changes(app: App, client: httpx.AsyncClient) -> None:
    a = (await client.post(CM, json=configmap("a"))).json()
    await client.post(CM, json=configmap("b"))
    async with stream(app, CM, f"watch=true&resourceVersion={a['metadata']['resourceVersion']}") as s:
        [event] = await s.events(1)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "b")


async def test_label_selector_transitions_are_added_and_deleted(app: App, client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", labels={"app": "x"}))
    async with stream(app, CM, "watch=true&labelSelector=app%3Dy") as s:
        mt = {"content-type": "application/merge-patch+json"}
        await client.patch(f"{CM}/a", content=b'{"metadata":{"labels":{"app":"y"}}}', headers=mt)
        await client.patch(f"{CM}/a", content=b'{"data":{"k":"v"}}', headers=mt)
        r = await client.patch(f"{CM}/a", content=b'{"metadata":{"labels":{"app":"z"}}}', headers=mt)
        events = await s.events(3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    deleted = events[2]["object"]
    assert deleted["metadata"]["labels"] == {"app": "y"}, "DELETED shows the last matching state"
    assert deleted["metadata"]["resourceVersion"] == r.json()["metadata"]["resourceVersion"]


async def test_initial_added_events_are_only_the_matching_objects_and_ignore_limit(
    app: App, client: httpx.AsyncClient
) -> None:
    for name, app_label in (("a", "x"), ("b", "y"), ("c", "y")):
        await client.post(CM, json=configmap(name, labels={"app": app_label}))
    async with stream(app, CM, "watch=true&labelSelector=app%3Dy&limit=1") as s:
        initial = await s.events(2)
        await client.post(CM, json=configmap("d", labels={"app": "y"}))
        [later] = await s.events(1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in [*initial, later]] == [
        ("ADDED", "b"), ("ADDED", "c"), ("ADDED", "d"),
    ]


async def test_bookmarks_only_when_requested(app: App, client: httpx.AsyncClient, clock: FakeClock) -> None:
    async with stream(app, CM, "watch=true&resourceVersion=1&timeoutSeconds=90") as s:
        await sleeping(clock)
        await clock.advance(61)
        await sleeping(clock)
        await clock.advance(30)
        assert await s.rest() == []
    async with stream(app, CM, "watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=90") as s:
        await sleeping(clock)
        await clock.advance(61)
        [bookmark] = await s.events(1)
    assert bookmark == {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                                                       "metadata": {"resourceVersion": "1"}}}


async def test_timeout_seconds_ends_the_stream_cleanly(app: App, clock: FakeClock) -> None:
    async with stream(app, CM, "watch=true&timeoutSeconds=5") as s:
        await sleeping(clock)
        await clock.advance(5)
        assert await s.rest() == []


async def test_too_old_resource_version_is_200_with_one_error_event(app: App, client: httpx.AsyncClient) -> None:
    for i in range(3):
        await client.post(CM, json=configmap(f"c{i}"))
    await app.state.store.compact(app.state.store.revision)
    async with stream(app, CM, "watch=true&resourceVersion=2") as s:
        events = await s.rest()
    assert s.status == 200
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith("too old resource version: 2 (")


async def test_watch_on_item_url_sees_only_that_object(app: App, client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    async with stream(app, f"{CM}/a", "watch=true") as s:
        await client.post(CM, json=configmap("b"))
        await client.patch(f"{CM}/a", content=b'{"data":{"x":"1"}}',
                           headers={"content-type": "application/merge-patch+json"})
        events = await s.events(2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("MODIFIED", "a")]


async def test_slow_watcher_is_closed_with_410(tmp_path: object, clock: FakeClock) -> None:
    import random
    from pathlib import Path

    from kubeloop.server import create_app
    from kubeloop.store import SqliteStore

    store = await SqliteStore.open(Path(str(tmp_path)) / "slow.db", watch_buffer=5)
    app = create_app(store=store, clock=clock, rng=random.Random(1), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    gate = asyncio.Event()
    received: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> dict[str, object]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.body":
            await gate.wait()  # a client that stopped reading
            received.append(message.get("body", b""))  # type: ignore[arg-type]
            if not message.get("more_body"):
                done.set()

    scope = {"type": "http", "method": "GET", "path": CM, "raw_path": CM.encode(),
             "query_string": f"watch=1&resourceVersion={store.revision}".encode(), "headers": []}
    task = asyncio.create_task(app(scope, receive, send))  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
            for i in range(20):
                await client.post(CM, json=configmap(f"c{i}"))
        gate.set()
        async with asyncio.timeout(5):
            await done.wait()
            await task
        lines = [line for line in b"".join(received).split(b"\n") if line]
        last = json.loads(lines[-1])
        assert last["type"] == "ERROR" and last["object"]["code"] == 410
        assert len(lines) < 21, "the watcher was cut off instead of buffering every event"
    finally:
        if not task.done():
            task.cancel()
        await app.shutdown()
        await store.close()


async def test_send_initial_events_ends_with_marked_bookmark(app: App, client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    async with stream(app, CM, query) as s:
        added, bookmark = await s.events(2)
    assert added["type"] == "ADDED"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watch_with_table_accept_sends_table_rows(app: App, client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with stream(app, CM, "watch=1", headers={"accept": accept}) as s:
        [event] = await s.events(1)
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "a"
