"""The reflector: list, watch from the list's version, resume, relist on 410, back off on errors.

Against the real API server in-process, wrapped by tests/client/_realapi.py's ``FaultyApp`` to
drop watch streams, inject ERROR 410 events and failing answers; on a FakeClock with a seeded rng.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.client import Client
from kubeloop.runtime import SharedInformer
from kubeloop.runtime._reflector import BACKOFF_INITIAL
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, eventually, kind, real_cluster

CM = kind("", "ConfigMap")


def cm(name: str, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "data": {}}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, FakeClock(), namespaces=("ns", "other")) as c:
        yield c


@pytest.fixture
def client(cluster: Cluster) -> Client:
    c: Client = cluster.client()
    return c


@pytest.fixture
async def informer(cluster: Cluster, client: Client) -> AsyncIterator[SharedInformer]:
    inf = SharedInformer(client, CM, namespace="", clock=cluster.clock, rng=random.Random(11))
    yield inf
    await inf.stop()


def cm_lists(cluster: Cluster) -> list[Any]:
    return cluster.app.lists("/configmaps")


async def test_lists_first_then_watches_from_the_lists_resource_version(
    cluster: Cluster, client: Client, informer: SharedInformer
) -> None:
    await client.create(CM, cm("a"))
    await client.create(CM, cm("b", "other"))
    list_rv = (await client.list(CM, namespace=""))["metadata"]["resourceVersion"]
    informer.start()
    await informer.wait_for_sync()
    assert {"ns/a", "other/b"} <= set(informer.cache.keys())
    await eventually(lambda: cluster.app.open_watches == 1)
    (watch,) = cluster.app.watches()
    assert watch.query["resourceVersion"] == list_rv
    assert watch.query["allowWatchBookmarks"] == "true"
    assert 300 <= int(watch.query["timeoutSeconds"]) < 600
    assert cm_lists(cluster)[-1].query["limit"] == "500"


async def test_watch_events_reach_the_cache(cluster: Cluster, client: Client, informer: SharedInformer) -> None:
    informer.start()
    await informer.wait_for_sync()
    await client.create(CM, cm("a"))
    await eventually(lambda: "ns/a" in informer.cache)
    await client.delete(CM, "a", namespace="ns")
    await eventually(lambda: "ns/a" not in informer.cache)


@pytest.mark.parametrize("cut", ["drop", "end"])
async def test_a_broken_or_ended_stream_resumes_from_the_last_version_seen_without_relisting(
    cluster: Cluster, client: Client, informer: SharedInformer, cut: str
) -> None:
    informer.start()
    await eventually(lambda: cluster.app.open_watches == 1)
    created = await client.create(CM, cm("a"))
    await eventually(lambda: "ns/a" in informer.cache)
    await cluster.clock.advance(5)  # an ended stream that delivered events is not a "very short watch"
    cluster.app.drop_watches() if cut == "drop" else cluster.app.end_watches()
    await eventually(lambda: len(cluster.app.watches()) == 2 and cluster.app.open_watches == 1)
    assert cluster.app.watches()[1].query["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert informer.reflector.lists == 1
    await client.create(CM, cm("b"))  # the resumed watch delivers new changes
    await eventually(lambda: "ns/b" in informer.cache)


async def test_an_expired_watch_relists_and_reconciles_missed_changes(
    cluster: Cluster, client: Client, informer: SharedInformer
) -> None:
    await client.create(CM, cm("a"))
    await client.create(CM, cm("b"))
    await client.create(CM, cm("d"))
    events: list[tuple[str, str]] = []
    informer.add_handler(
        on_add=lambda o: events.append(("add", o["metadata"]["name"])),
        on_update=lambda old, new: events.append(("update", new["metadata"]["name"])),
        on_delete=lambda o: events.append(("delete", o["metadata"]["name"])),
    )
    informer.start()
    await eventually(lambda: cluster.app.open_watches == 1)
    events.clear()
    # The relist after the 410 fails once, so the reflector backs off (on fake time) while the
    # changes below happen: the informer can only learn of them by relisting.
    cluster.app.fail("GET", 500, path_contains="/configmaps", times=1)
    cluster.app.expire_watches()
    await eventually(lambda: len(cm_lists(cluster)) == 2)
    await cluster.settle()
    await client.delete(CM, "a", namespace="ns")
    await client.create(CM, cm("c"))
    await client.patch(CM, "b", {"data": {"k": "v"}}, namespace="ns")
    assert events == []
    await cluster.run_for(2 * BACKOFF_INITIAL, step=0.1)
    await eventually(lambda: informer.reflector.lists == 2 and cluster.app.open_watches == 1)
    assert {"ns/b", "ns/c", "ns/d"} <= set(informer.cache.keys()) and "ns/a" not in informer.cache
    relisted_b = informer.cache.get("ns/b")
    assert relisted_b is not None and relisted_b["data"] == {"k": "v"}
    # The relist is diffed against the cache: a changed resourceVersion is an update, an unchanged
    # object ("d") is no event at all (client-go sharedIndexInformer.OnUpdate on Replace).
    assert sorted(e for e in events if e[1] in {"a", "b", "c", "d"}) == [
        ("add", "c"), ("delete", "a"), ("update", "b")
    ]
    relisted_rv = informer.reflector.last_sync_resource_version
    assert cluster.app.watches()[-1].query["resourceVersion"] == relisted_rv


async def test_list_errors_back_off_exponentially_on_the_clock(
    cluster: Cluster, informer: SharedInformer
) -> None:
    # client-go's reflector backoff: 0.8 s doubling (cap 30 s), each delay times (1 + U[0, 1)).
    cluster.app.fail("GET", 500, path_contains="/configmaps", times=3)
    informer.start()
    step = 0.05
    for _ in range(int(12 / step)):
        if informer.has_synced():
            break
        await cluster.run_for(step, step=step)
    assert informer.has_synced()
    times = [r.at for r in cm_lists(cluster)]
    assert len(times) == 4
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for gap, base in zip(gaps, (0.8, 1.6, 3.2), strict=True):
        assert base <= gap < 2 * base + step


async def test_a_watch_that_ends_at_once_counts_as_a_failure_and_relists_after_a_backoff(
    cluster: Cluster, informer: SharedInformer
) -> None:
    informer.start()
    await informer.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    cluster.app.end_watches()  # ends with no events and no time passed: a "very short watch"
    await cluster.settle()
    assert informer.reflector.lists == 1 and cluster.app.open_watches == 0
    await cluster.run_for(2 * BACKOFF_INITIAL, step=0.1)
    await eventually(lambda: informer.reflector.lists == 2)
