"""The controllers' EventSink counts repeats on one Event, as client-go's EventCorrelator does.

Upstream (``tools/record/events_cache.go``, ``eventObserve``): an Event with the same source, involved
object, type, reason and message as one recorded before is patched with ``count`` + 1 and a new
``lastTimestamp`` instead of being created again; an Event deleted meanwhile is created afresh.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.client import Client
from kubeloop.controllers._events import EventSink
from kubeloop.testing import FakeClock, InProcessCluster, InterceptedClient, resource

EVENTS = resource("", "Event")
CONFIGMAP = {"metadata": {"name": "web", "namespace": "ns", "uid": "u-1"}}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"]) as cluster:
        yield cluster


def sink_on(cluster: InProcessCluster, client: Client | None = None, component: str = "test") -> EventSink:
    sink = EventSink(client or cluster.client, component=component, clock=cluster.clock)
    cluster.run_in_background(sink.run())
    return sink


def emit(sink: EventSink, message: str = "Scaled up") -> None:
    sink.emit(CONFIGMAP, "Normal", "Scaled", message, api_version="v1", kind="ConfigMap")


async def events(cluster: InProcessCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await cluster.client.list(EVENTS, namespace="ns")).get("items") or []
    return items


async def until_count(cluster: InProcessCluster, count: int) -> list[dict[str, Any]]:
    async def reached() -> list[dict[str, Any]]:
        found = await events(cluster)
        return found if sum(e.get("count", 1) for e in found) >= count else []

    result: list[dict[str, Any]] = await cluster.eventually(reached, step=0.0)
    return result


async def test_a_repeated_event_is_counted_on_the_first_one(cluster: InProcessCluster) -> None:
    assert isinstance(cluster.clock, FakeClock)
    sink = sink_on(cluster)
    emit(sink)
    [first] = await until_count(cluster, 1)
    await cluster.clock.advance(30)
    emit(sink)
    await until_count(cluster, 2)
    await cluster.clock.advance(30)
    emit(sink)
    [counted] = await until_count(cluster, 3)
    assert counted["metadata"]["name"] == first["metadata"]["name"]
    assert counted["count"] == 3
    assert counted["firstTimestamp"] == first["firstTimestamp"]
    assert counted["lastTimestamp"] != first["lastTimestamp"]
    assert counted["involvedObject"] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "web",
                                         "uid": "u-1"}


async def test_repeats_queued_together_are_one_write(cluster: InProcessCluster) -> None:
    counting = cluster.new_client(Client)
    writes = InterceptedClient(counting)
    sink = EventSink(writes, component="test", clock=cluster.clock)
    for _ in range(4):
        emit(sink)
    cluster.run_in_background(sink.run())
    [event] = await until_count(cluster, 4)
    assert event["count"] == 4

    async def recorded() -> list[str]:  # the write is recorded once its answer is back
        return [w.verb for w in writes.writes]

    assert await cluster.eventually(recorded, step=0.0) == ["create"]
    assert sink.pending == 0


async def test_a_different_message_is_another_event(cluster: InProcessCluster) -> None:
    sink = sink_on(cluster)
    emit(sink, "Scaled up")
    emit(sink, "Scaled down")
    found = await until_count(cluster, 2)
    assert sorted(e["message"] for e in found) == ["Scaled down", "Scaled up"]


async def test_an_event_deleted_meanwhile_is_created_again(cluster: InProcessCluster) -> None:
    sink = sink_on(cluster)
    emit(sink)
    [first] = await until_count(cluster, 1)
    await cluster.client.delete(EVENTS, first["metadata"]["name"], namespace="ns")
    emit(sink)
    [again] = await until_count(cluster, 1)
    assert again["metadata"]["name"] != first["metadata"]["name"]


async def test_two_components_at_one_instant_record_two_events(cluster: InProcessCluster) -> None:
    scheduler, kubelet = sink_on(cluster, component="default-scheduler"), sink_on(cluster, component="kubelet")
    emit(scheduler)
    emit(kubelet)
    found = await until_count(cluster, 2)
    assert sorted(e["source"]["component"] for e in found) == ["default-scheduler", "kubelet"]
