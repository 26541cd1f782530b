"""The reflector: list, watch from the list's version, resume, relist on 410, back off on errors.

Runs against the fake API server of tests/client (real HTTP semantics, in-process) with a FakeClock:
nothing here sleeps for real.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import KindRegistry
from kubeloop.client import Client
from kubeloop.runtime import SharedInformer
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _fakeapi import FakeApi, Request

CM = KindRegistry().by_kind("", "ConfigMap")
assert CM is not None


def cm(name: str, ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "data": {}}


async def eventually(cond: Callable[[], bool], *, turns: int = 2000) -> None:
    """Let the event loop run until ``cond()`` holds (no wall-clock waiting)."""
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


def lists(api: FakeApi) -> list[Request]:
    return [r for r in api.requests if r.method == "GET" and "watch" not in r.query]


def watches(api: FakeApi) -> list[Request]:
    return [r for r in api.requests if r.query.get("watch") == "true"]


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def informer(api: FakeApi, clock: FakeClock) -> AsyncIterator[SharedInformer]:
    async with Client.from_asgi(api, clock=clock) as client:
        inf = SharedInformer(client, CM, namespace="", clock=clock)
        yield inf
        await inf.stop()


async def test_lists_first_then_watches_from_the_lists_resource_version(
    api: FakeApi, informer: SharedInformer
) -> None:
    api.seed(CM, cm("a"))
    api.seed(CM, cm("b", "other"))
    list_rv = str(api.rv)
    informer.start()
    await informer.wait_for_sync()
    assert sorted(informer.cache.keys()) == ["default/a", "other/b"]
    await eventually(lambda: len(watches(api)) == 1)
    (watch,) = watches(api)
    assert watch.query["resourceVersion"] == list_rv
    assert watch.query["allowWatchBookmarks"] == "true"
    assert 300 <= int(watch.query["timeoutSeconds"]) < 600
    assert lists(api)[0].query["limit"] == "500"


async def test_watch_events_reach_the_cache(api: FakeApi, informer: SharedInformer) -> None:
    informer.start()
    await informer.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    api.seed(CM, cm("a"))
    await eventually(lambda: "default/a" in informer.cache)
    api.remove(CM, "default", "a")
    await eventually(lambda: "default/a" not in informer.cache)


async def test_a_dropped_stream_resumes_from_the_last_version_seen_without_relisting(
    api: FakeApi, informer: SharedInformer
) -> None:
    informer.start()
    await eventually(lambda: len(api.watchers) == 1)
    api.seed(CM, cm("a"))
    seen_rv = str(api.rv)
    await eventually(lambda: "default/a" in informer.cache)
    api.drop_watches()
    await eventually(lambda: len(watches(api)) == 2 and len(api.watchers) == 1)
    assert watches(api)[1].query["resourceVersion"] == seen_rv
    assert informer.reflector.lists == 1
    api.seed(CM, cm("b"))  # the resumed watch delivers new changes
    await eventually(lambda: "default/b" in informer.cache)


async def test_an_expired_watch_relists_and_reconciles_missed_changes(
    api: FakeApi, informer: SharedInformer
) -> None:
    api.seed(CM, cm("a"))
    api.seed(CM, cm("b"))
    events: list[tuple[str, str]] = []
    informer.add_handler(
        on_add=lambda o: events.append(("add", o["metadata"]["name"])),
        on_update=lambda old, new: events.append(("update", new["metadata"]["name"])),
        on_delete=lambda o: events.append(("delete", o["metadata"]["name"])),
    )
    informer.start()
    await eventually(lambda: len(api.watchers) == 1)
    events.clear()
    api.expire_watches()  # ERROR 410 Expired, then the stream closes; the changes below are missed
    api.remove(CM, "default", "a")
    api.seed(CM, cm("c"))
    await eventually(lambda: informer.reflector.lists == 2 and len(api.watchers) == 1)
    assert sorted(informer.cache.keys()) == ["default/b", "default/c"]
    assert sorted(events) == [("add", "c"), ("delete", "a")]
    assert watches(api)[-1].query["resourceVersion"] == str(api.rv)


async def test_list_errors_back_off_exponentially_on_the_clock(
    api: FakeApi, informer: SharedInformer, clock: FakeClock
) -> None:
    api.fail("GET", 500, path_contains="configmaps", times=2)
    informer.start()
    await eventually(lambda: clock.sleepers == 1)
    assert len(lists(api)) == 1 and not informer.has_synced()
    await clock.advance(1.6)  # first delay is 0.8 s with jitter in [0, 1): below 1.6 s
    await eventually(lambda: len(lists(api)) == 2 and clock.sleepers == 1)
    await clock.advance(1.55)  # second delay is at least 1.6 s: nothing yet
    assert len(lists(api)) == 2
    await clock.advance(1.7)  # ... and below 3.2 s
    await informer.wait_for_sync()
    assert len(lists(api)) == 3


async def test_a_watch_that_keeps_failing_backs_off_and_relists(
    api: FakeApi, informer: SharedInformer, clock: FakeClock
) -> None:
    api.fail("GET", 403, path_contains="configmaps", times=1)  # the list fails once
    informer.start()
    await eventually(lambda: clock.sleepers == 1)
    await clock.advance(1.6)
    await informer.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    api.drop_watches()  # ends with no events and no time passed: a "very short watch"
    await eventually(lambda: clock.sleepers == 1)
    assert informer.reflector.lists == 1
    await clock.advance(3.2)
    await eventually(lambda: informer.reflector.lists == 2)
