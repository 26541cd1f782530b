"""FaultyApp wraps the real server: scripted errors, cut watches and recorded requests, seen by the real client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from kubeloop.api import Expired, NotFound, ServiceUnavailable
from kubeloop.client import Client, ConnectionFailed, WatchEvent
from kubeloop.testing import FakeClock, FaultyApp, HttpFault, InProcessCluster, eventually, resource

CONFIGMAPS = resource("", "ConfigMap")


async def _const(value: bool) -> bool:
    return value


async def wait_for(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate()`` (no fake time passes) until it holds."""
    await eventually(lambda: _const(predicate()), interval=0.0005)


async def _resource_version(client: Client) -> str:
    listed = await client.list(CONFIGMAPS, namespace="team")
    version: str = listed["metadata"]["resourceVersion"]
    return version


async def test_a_scripted_503_with_retry_after_is_answered_then_the_real_server_answers(
    faulty_cluster: InProcessCluster, faults: FaultyApp, clock: FakeClock
) -> None:
    await faulty_cluster.create(CONFIGMAPS, "a", data={"k": "v"})
    fault = faults.fail("GET", 503, path_contains="/configmaps/a", retry_after=2)
    assert faults.pending_faults == [fault]
    sleeping = clock.sleepers
    task = asyncio.create_task(faulty_cluster.client.get(CONFIGMAPS, "a"))
    await wait_for(lambda: clock.sleepers > sleeping)  # the client waits out Retry-After on the fake clock
    assert not task.done()
    await clock.advance(2)
    got = await task
    assert got["data"] == {"k": "v"}
    first, second = [r for r in faults.requests if r.method == "GET" and r.path.endswith("/configmaps/a")]
    assert second.at - first.at == 2
    assert faults.pending_faults == []


async def test_a_scripted_fault_answers_only_matching_requests_and_only_times_times(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    faults.fail("POST", 503, path_contains="/configmaps", query_has="dryRun", times=2)
    created = await faulty_cluster.client.create(CONFIGMAPS, {"metadata": {"name": "real"}})  # no dryRun
    assert created["metadata"]["name"] == "real"
    assert faults.pending_faults == [HttpFault("POST", 503, "/configmaps", query_has="dryRun")] * 2
    faults.heal()
    assert faults.pending_faults == []


async def test_without_retry_after_the_client_raises_the_scripted_error(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    faults.fail("GET", 503, path_contains="/configmaps/missing")
    with pytest.raises(ServiceUnavailable, match="injected 503"):
        await faulty_cluster.client.get(CONFIGMAPS, "missing")
    with pytest.raises(NotFound):  # the fault is used up: the real server answers
        await faulty_cluster.client.get(CONFIGMAPS, "missing")


async def test_a_dropped_watch_ends_as_a_connection_failure(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    client = faulty_cluster.client
    seen: list[WatchEvent] = []

    async def consume(version: str) -> None:
        async for event in client.watch(CONFIGMAPS, namespace="team", resource_version=version,
                                        allow_bookmarks=False):  # fmt: skip
            seen.append(event)

    task = asyncio.create_task(consume(await _resource_version(client)))
    await wait_for(lambda: faults.open_watches == 1)
    await faulty_cluster.create(CONFIGMAPS, "a")
    await wait_for(lambda: len(seen) == 1)
    faults.drop_watches()
    with pytest.raises(ConnectionFailed):
        await task
    assert faults.open_watches == 0
    assert [(e.type, e.object["metadata"]["name"]) for e in seen] == [("ADDED", "a")]


async def test_an_expired_watch_makes_the_client_raise_expired(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    client = faulty_cluster.client

    async def consume(version: str) -> list[WatchEvent]:
        return [e async for e in client.watch(CONFIGMAPS, namespace="team", resource_version=version)]

    task = asyncio.create_task(consume(await _resource_version(client)))
    await wait_for(lambda: faults.open_watches == 1)
    faults.expire_watches()
    with pytest.raises(Expired, match="too old resource version"):
        await task
    assert faults.open_watches == 0


async def test_an_ended_watch_just_ends(faulty_cluster: InProcessCluster, faults: FaultyApp) -> None:
    client = faulty_cluster.client

    async def consume(version: str) -> list[WatchEvent]:
        return [e async for e in client.watch(CONFIGMAPS, namespace="team", resource_version=version,
                                              allow_bookmarks=False)]  # fmt: skip

    task = asyncio.create_task(consume(await _resource_version(client)))
    await wait_for(lambda: faults.open_watches == 1)
    faults.end_watches()
    assert await task == []
    assert len(faults.watches()) == 1


async def test_requests_are_recorded_in_order_with_query_headers_and_body(
    faulty_cluster: InProcessCluster, faults: FaultyApp, clock: FakeClock
) -> None:
    before = len(faults.requests)
    await clock.advance(5)
    await faulty_cluster.client.create(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "v"}}, dry_run=True)
    await faulty_cluster.client.list(CONFIGMAPS, namespace="team", label_selector="app=web")
    create, listing = faults.requests[before:]
    assert (create.method, create.path) == ("POST", "/api/v1/namespaces/team/configmaps")
    assert create.query == {"dryRun": "All"}
    assert create.headers["content-type"] == "application/json"
    assert orjson.loads(create.body)["data"] == {"k": "v"}
    assert create.at == clock.monotonic()
    assert (listing.method, listing.query) == ("GET", {"labelSelector": "app=web"})
    assert faults.lists("configmaps")[-1] == listing
    assert not listing.is_watch


async def test_settle_returns_once_no_request_is_in_flight(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    writes = [asyncio.create_task(faulty_cluster.create(CONFIGMAPS, f"cm-{i}")) for i in range(5)]
    await faults.settle()
    assert faults.in_flight == 0
    assert all(w.done() for w in writes)
    await asyncio.gather(*writes)


async def test_every_client_of_the_cluster_goes_through_the_injector_and_app_stays_the_server(
    faulty_cluster: InProcessCluster, faults: FaultyApp
) -> None:
    assert faulty_cluster.app is faults.app
    other = faulty_cluster.new_client(Client)
    faults.fail("GET", 503, path_contains="/configmaps/x")
    with pytest.raises(ServiceUnavailable):
        await other.get(CONFIGMAPS, "x")
    assert faults.requests[-1].path == "/api/v1/namespaces/team/configmaps/x"


async def test_without_the_option_there_is_no_injector(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path) as cluster:
        with pytest.raises(AssertionError, match="inject_http_faults"):
            cluster.http_faults  # noqa: B018
