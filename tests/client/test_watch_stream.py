"""Watch streams: newline-delimited events in any chunking, ERROR events as errors, closing; resume and
410 against the real API server in-process (faults injected by wrapping it)."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
import pytest
from _realapi import Cluster, FaultyApp, eventually

from kubeloop.api import Expired, Gone, InternalError, KindRegistry
from kubeloop.client import Client, ConnectionFailed, WatchEvent
from kubeloop.client._watch import WatchDecoder

CM = KindRegistry().by_kind("", "ConfigMap")
assert CM is not None


def line(kind: str, name: str, rv: str) -> bytes:
    return orjson.dumps({"type": kind, "object": {"metadata": {"name": name, "resourceVersion": rv}}}) + b"\n"


def test_events_split_across_chunks_anywhere_are_reassembled() -> None:
    body = line("ADDED", "a", "1") + line("MODIFIED", "a", "2") + line("DELETED", "a", "3")
    for cut in range(1, len(body)):
        decoder = WatchDecoder()
        events = [*decoder.feed(body[:cut]), *decoder.feed(body[cut:]), *decoder.finish()]
        assert [(e.type, e.resource_version) for e in events] == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "3")]


def test_an_error_event_with_code_410_raises_expired() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}
    decoder = WatchDecoder()
    with pytest.raises(Expired, match="too old resource version"):
        list(decoder.feed(orjson.dumps({"type": "ERROR", "object": status}) + b"\n"))


def test_garbage_in_the_stream_is_an_internal_error() -> None:
    with pytest.raises(InternalError):
        list(WatchDecoder().feed(b"{not json\n"))
    with pytest.raises(InternalError):
        list(WatchDecoder().feed(b'{"type":"WHAT","object":{}}\n'))


async def test_watch_without_version_starts_with_the_current_state_then_streams_changes(
    client: Client, app: FaultyApp
) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    got: list[WatchEvent] = []
    stream = client.watch(CM)
    async with contextlib.aclosing(stream):
        async for event in stream:
            if event.type == "BOOKMARK":
                continue
            got.append(event)
            if len(got) == 1:
                await client.patch(CM, "a", {"data": {"k": "v"}})
            if len(got) == 2:
                break
    assert [e.type for e in got] == ["ADDED", "MODIFIED"]
    assert got[1].object["data"] == {"k": "v"}
    await eventually(lambda: app.open_watches == 0)  # closing the iterator closed it on the server


async def rv_of(client: Client) -> str:
    return str((await client.list(CM))["metadata"]["resourceVersion"])


async def test_watch_from_a_version_sends_only_later_changes(client: Client, app: FaultyApp) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    rv = await rv_of(client)
    await client.create(CM, {"metadata": {"name": "b"}})
    stream = client.watch(CM, resource_version=rv, timeout_seconds=5)
    async with contextlib.aclosing(stream):
        first = await anext(stream)
    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "b")
    assert app.requests[-1].query == {
        "watch": "true", "resourceVersion": rv, "timeoutSeconds": "5", "allowWatchBookmarks": "true",
    }  # fmt: skip


async def test_watch_from_a_compacted_version_raises_expired(cluster: Cluster, client: Client) -> None:
    first = await client.create(CM, {"metadata": {"name": "a"}})
    await client.patch(CM, "a", {"data": {"k": "v"}})
    await cluster.store.compact(cluster.store.revision)
    with pytest.raises(Gone):
        async for _ in client.watch(CM, resource_version=first["metadata"]["resourceVersion"]):
            pass


async def test_an_injected_410_mid_stream_raises_expired(client: Client, app: FaultyApp) -> None:
    async def consume() -> list[WatchEvent]:
        return [e async for e in client.watch(CM, resource_version=await rv_of(client))]

    task = asyncio.create_task(consume())
    await eventually(lambda: app.open_watches == 1)
    app.expire_watches()
    with pytest.raises(Expired, match="too old resource version"):
        await task


async def test_a_watch_that_the_server_ends_at_its_timeout_just_ends(cluster: Cluster, client: Client) -> None:
    async def consume() -> list[WatchEvent]:
        return [e async for e in client.watch(CM, resource_version=await rv_of(client), timeout_seconds=5)]

    task = asyncio.create_task(consume())
    await eventually(lambda: cluster.app.open_watches == 1)
    await cluster.run_for(6)
    assert await task == []


async def test_a_dropped_connection_is_a_connection_failure_and_a_resumed_watch_misses_nothing(
    client: Client, app: FaultyApp
) -> None:
    seen: list[WatchEvent] = []

    async def consume(rv: str) -> None:
        async for e in client.watch(CM, resource_version=rv, allow_bookmarks=False):
            seen.append(e)

    task = asyncio.create_task(consume(await rv_of(client)))
    await eventually(lambda: app.open_watches == 1)
    await client.create(CM, {"metadata": {"name": "a"}})
    await eventually(lambda: len(seen) == 1)
    app.drop_watches()
    with pytest.raises(ConnectionFailed):
        await task
    await client.create(CM, {"metadata": {"name": "b"}})  # while nobody watches
    task = asyncio.create_task(consume(seen[-1].resource_version))
    await eventually(lambda: len(seen) == 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in seen] == [("ADDED", "a"), ("ADDED", "b")]
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_cancelling_the_consumer_closes_the_stream(client: Client, app: FaultyApp) -> None:
    async def consume(rv: str) -> None:
        async for _ in client.watch(CM, resource_version=rv):
            pass

    task = asyncio.create_task(consume(await rv_of(client)))
    await eventually(lambda: app.open_watches == 1)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await eventually(lambda: app.open_watches == 0)
