"""The circuit breaker: closed -> open -> half-open -> closed, on fake time; requeue while open; metrics
and Events (written through the real client to the real server)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import NotFound, ServiceUnavailable
from kubeloop.client import Client
from kubeloop.runtime import (
    EVENTS,
    CircuitBreaker,
    CircuitOpen,
    Controller,
    EnqueueForObject,
    EventRecorder,
    Metrics,
    Request,
    TransientError,
)
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, eventually, kind, real_cluster

CM = kind("", "ConfigMap")


class Dependency:
    """Something a reconciler calls: fails while ``down``; counts calls."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    async def call(self) -> str:
        self.calls += 1
        if self.down:
            raise ServiceUnavailable("dependency unavailable")
        return "ok"


async def attempt(breaker: CircuitBreaker, dep: Dependency, on: dict[str, Any] | None = None) -> str:
    try:
        return await breaker.call(dep.call, on=on)
    except CircuitOpen as err:
        return f"open {err.retry_after:g}"
    except ServiceUnavailable:
        return "failed"


def state_gauge(metrics: Metrics, state: str) -> float | None:
    return metrics.sample("kubeloop_circuit_breaker_state", {"name": "db", "state": state})


async def test_consecutive_failures_open_the_circuit_and_a_success_resets_the_count() -> None:
    clock, dep = FakeClock(), Dependency()
    breaker = CircuitBreaker("db", failure_threshold=3, cool_off=30, clock=clock)
    dep.down = True
    assert [await attempt(breaker, dep) for _ in range(2)] == ["failed", "failed"]
    dep.down = False
    assert await attempt(breaker, dep) == "ok"  # resets the consecutive count
    dep.down = True
    assert [await attempt(breaker, dep) for _ in range(2)] == ["failed", "failed"]
    assert breaker.state == "closed"
    assert await attempt(breaker, dep) == "failed"
    assert breaker.state == "open" and dep.calls == 6


async def test_while_open_no_call_is_made_and_the_retry_is_the_rest_of_the_cool_off() -> None:
    clock, dep, metrics = FakeClock(), Dependency(), Metrics()
    breaker = CircuitBreaker("db", failure_threshold=1, cool_off=30, clock=clock, metrics=metrics)
    dep.down = True
    await attempt(breaker, dep)
    await clock.advance(10)
    assert await attempt(breaker, dep) == "open 20"
    assert dep.calls == 1
    assert isinstance(CircuitOpen("db", 1.0), TransientError)
    assert metrics.sample("kubeloop_circuit_breaker_rejected_total", {"name": "db"}) == 1
    assert state_gauge(metrics, "open") == 1 and state_gauge(metrics, "closed") == 0


async def test_after_the_cool_off_one_probe_goes_through_and_its_success_closes_the_circuit() -> None:
    clock, dep, metrics = FakeClock(), Dependency(), Metrics()
    breaker = CircuitBreaker("db", failure_threshold=1, cool_off=30, clock=clock, metrics=metrics)
    dep.down = True
    await attempt(breaker, dep)
    await clock.advance(30)
    assert breaker.state == "half-open"
    dep.down = False
    gate = asyncio.Event()

    async def slow_probe() -> str:
        await gate.wait()
        return await dep.call()

    probe = asyncio.create_task(breaker.call(slow_probe))
    await asyncio.sleep(0)
    assert await attempt(breaker, dep) == "open 30"  # one probe at a time
    gate.set()
    assert await probe == "ok"
    assert breaker.state == "closed" and state_gauge(metrics, "closed") == 1
    assert await attempt(breaker, dep) == "ok"
    transitions = {
        to: metrics.sample("kubeloop_circuit_breaker_transitions_total", {"name": "db", "to": to})
        for to in ("open", "half-open", "closed")
    }
    assert transitions == {"open": 1, "half-open": 1, "closed": 1}


async def test_with_a_success_threshold_probes_go_one_at_a_time_until_enough_have_succeeded() -> None:
    clock, dep = FakeClock(), Dependency()
    breaker = CircuitBreaker("db", failure_threshold=1, success_threshold=3, cool_off=30, clock=clock)
    dep.down = True
    await attempt(breaker, dep)
    await clock.advance(30)
    dep.down = False
    assert [await attempt(breaker, dep) for _ in range(2)] == ["ok", "ok"]
    assert breaker.state == "half-open"  # each success frees the probe slot for the next probe
    assert await attempt(breaker, dep) == "ok"
    assert breaker.state == "closed" and dep.calls == 4


async def test_a_failed_probe_opens_the_circuit_for_another_full_cool_off() -> None:
    clock, dep = FakeClock(), Dependency()
    breaker = CircuitBreaker("db", failure_threshold=2, cool_off=30, clock=clock)
    dep.down = True
    await attempt(breaker, dep)
    await attempt(breaker, dep)
    await clock.advance(31)
    assert await attempt(breaker, dep) == "failed"  # the probe
    assert breaker.state == "open"
    assert await attempt(breaker, dep) == "open 30"
    assert dep.calls == 3


async def test_answers_that_prove_the_dependency_works_are_not_failures() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("db", failure_threshold=1, cool_off=30, clock=clock)

    async def not_found() -> None:
        raise NotFound("no such thing")

    for _ in range(3):
        with pytest.raises(NotFound):
            await breaker.call(not_found)
    assert breaker.state == "closed"
    with pytest.raises(RuntimeError):
        async with breaker.guard():
            raise RuntimeError("timeout talking to it")
    assert breaker.state == "open" and isinstance(breaker.last_error, RuntimeError)


def test_thresholds_are_validated() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker("db", failure_threshold=0)
    with pytest.raises(ValueError):
        CircuitBreaker("db", cool_off=0)


class Source:
    """The controller's event-source seam, fed by the test."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_handler(self, on_add: Any, on_update: Any, on_delete: Any) -> None:
        self.handlers.append(on_add)

    def has_synced(self) -> bool:
        return True

    async def wait_for_sync(self) -> None:
        return None

    def added(self, name: str) -> None:
        for h in self.handlers:
            h({"metadata": {"namespace": "ns", "name": name}})


async def test_reconciles_that_need_an_open_dependency_requeue_after_the_cool_off_without_calling_it() -> None:
    clock, dep, metrics = FakeClock(), Dependency(), Metrics()
    breaker = CircuitBreaker("db", failure_threshold=2, cool_off=30, clock=clock, metrics=metrics)
    seen: list[Request] = []

    async def reconcile(request: Request) -> None:
        seen.append(request)
        async with breaker.guard():
            await dep.call()

    source = Source()
    controller = Controller("c", reconcile, clock=clock, metrics=metrics)
    controller.watch(source, EnqueueForObject())
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0)
    dep.down = True
    for name in ("a", "b", "c", "d"):
        source.added(name)
    await eventually(lambda: len(seen) == 4)
    assert dep.calls == 2 and breaker.state == "open"  # c and d were not called ...
    requeued = metrics.sample("controller_runtime_reconcile_total", {"controller": "c", "result": "requeue_after"})
    assert requeued == 2  # ... and are not counted as errors
    dep.down = False
    await clock.advance(29)
    await eventually(lambda: len(seen) == 6)  # a and b come back after their own backoff ...
    assert dep.calls == 2  # ... but find the circuit open too: nobody calls the dependency
    await clock.advance(1.5)
    await eventually(lambda: dep.calls == 6 and breaker.state == "closed")  # all four, once each
    controller.stop()
    await task


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, FakeClock()) as c:
        yield c


async def test_each_change_of_state_is_an_event_on_the_object_being_reconciled(cluster: Cluster) -> None:
    client: Client = cluster.client()
    obj = await client.create(CM, {"metadata": {"name": "web", "namespace": "ns"}})
    events = EventRecorder(client, component="mirror", clock=cluster.clock)
    breaker = CircuitBreaker("db", failure_threshold=1, cool_off=30, clock=cluster.clock, events=events)
    dep = Dependency()
    dep.down = True
    await attempt(breaker, dep, on=obj)
    await cluster.clock.advance(30)
    dep.down = False
    await attempt(breaker, dep, on=obj)
    items = (await client.list(EVENTS, namespace="ns"))["items"]
    items.sort(key=lambda e: e["metadata"]["name"])
    assert [(e["type"], e["reason"]) for e in items] == [
        ("Warning", "CircuitOpen"), ("Normal", "CircuitHalfOpen"), ("Normal", "CircuitClosed"),
    ]  # fmt: skip
    assert {e["involvedObject"]["uid"] for e in items} == {obj["metadata"]["uid"]}
    assert "dependency 'db' is open" in items[0]["message"] and "dependency unavailable" in items[0]["message"]
    assert items[0]["source"]["component"] == "mirror"


async def test_events_go_to_a_designated_object_when_one_is_set(cluster: Cluster) -> None:
    client: Client = cluster.client()
    obj = await client.create(CM, {"metadata": {"name": "web", "namespace": "ns"}})
    anchor = await client.create(CM, {"metadata": {"name": "db-status", "namespace": "ns"}})
    breaker = CircuitBreaker(
        "db", failure_threshold=1, clock=cluster.clock, events=EventRecorder(client, component="c"),
        event_object=anchor,
    )  # fmt: skip
    dep = Dependency()
    dep.down = True
    await attempt(breaker, dep, on=obj)
    (event,) = (await client.list(EVENTS, namespace="ns"))["items"]
    assert event["involvedObject"]["name"] == "db-status" and event["reason"] == "CircuitOpen"
