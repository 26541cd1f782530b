"""Watch streams: newline-delimited events in any chunking, ERROR events as errors, closing."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
import pytest
from _fakeapi import FakeApi

from kubeloop.api import Expired, Gone, InternalError, KindRegistry
from kubeloop.client import Client, WatchEvent
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
    client: Client, api: FakeApi
) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    got: list[WatchEvent] = []
    stream = client.watch(CM)
    async with contextlib.aclosing(stream):
        async for event in stream:
            got.append(event)
            if len(got) == 1:
                await client.patch(CM, "a", {"data": {"k": "v"}})
            if len(got) == 2:
                break
    assert [e.type for e in got] == ["ADDED", "MODIFIED"]
    assert got[1].object["data"] == {"k": "v"}
    await asyncio.sleep(0)
    assert api.watchers == []  # closing the iterator closed the stream on the server side


async def test_watch_from_a_version_sends_only_later_changes(client: Client, api: FakeApi) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    rv = str(api.rv)
    await client.create(CM, {"metadata": {"name": "b"}})
    stream = client.watch(CM, resource_version=rv, timeout_seconds=5)
    async with contextlib.aclosing(stream):
        first = await anext(stream)
    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "b")
    assert api.requests[-1].query == {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "5",
                                      "allowWatchBookmarks": "true"}


async def test_watch_from_a_compacted_version_raises_expired(client: Client, api: FakeApi) -> None:
    api.compacted_rv = 500
    with pytest.raises(Gone):
        async for _ in client.watch(CM, resource_version="1"):
            pass


async def test_a_watch_that_the_server_ends_just_ends(client: Client, api: FakeApi) -> None:
    async def consume() -> list[WatchEvent]:
        return [e async for e in client.watch(CM, resource_version=str(api.rv))]

    task = asyncio.create_task(consume())
    for _ in range(100):
        if api.watchers:
            break
        await asyncio.sleep(0)
    api.drop_watches()
    assert await task == []


async def test_cancelling_the_consumer_closes_the_stream(client: Client, api: FakeApi) -> None:
    async def consume() -> None:
        async for _ in client.watch(CM, resource_version=str(api.rv)):
            pass

    task = asyncio.create_task(consume())
    for _ in range(100):
        if api.watchers:
            break
        await asyncio.sleep(0)
    assert len(api.watchers) == 1
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert api.watchers == []
