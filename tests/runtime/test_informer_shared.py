"""Shared informers: one watch per kind for any number of handlers, has_synced, handler semantics.

Against the real API server in-process (tests/client/_realapi.py).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.client import Client
from kubeloop.runtime import OWNER_UID_INDEX, InformerFactory
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, eventually, kind, real_cluster

CM = kind("", "ConfigMap")
POD = kind("", "Pod")


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}, "data": {}}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, FakeClock()) as c:
        yield c


@pytest.fixture
def client(cluster: Cluster) -> Client:
    c: Client = cluster.client()
    return c


@pytest.fixture
async def factory(cluster: Cluster) -> AsyncIterator[InformerFactory]:
    f = InformerFactory(cluster.client(), namespace="ns", clock=cluster.clock)
    yield f
    await f.stop()


async def test_two_controllers_watching_a_kind_share_one_list_and_one_watch(
    cluster: Cluster, client: Client, factory: InformerFactory
) -> None:
    first, second = factory.informer(CM), factory.informer(CM)
    assert first is second
    seen_a: list[str] = []
    seen_b: list[str] = []
    first.add_handler(on_add=lambda o: seen_a.append(o["metadata"]["name"]))
    second.add_handler(on_add=lambda o: seen_b.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    await client.create(CM, cm("x"))
    await eventually(lambda: seen_a == ["x"] and seen_b == ["x"])
    assert len(cluster.app.watches()) == 1
    assert first.reflector.lists == 1


async def test_different_selectors_or_kinds_get_their_own_informer(factory: InformerFactory) -> None:
    assert factory.informer(CM) is not factory.informer(CM, label_selector="a=b")
    assert factory.informer(CM) is not factory.informer(POD)
    assert len(factory.informers) == 3


async def test_has_synced_turns_true_only_after_the_first_list(cluster: Cluster, client: Client, factory: InformerFactory) -> None:
    await client.create(CM, cm("a"))
    informer = factory.informer(CM)
    assert not informer.has_synced() and factory.has_synced() is False
    factory.start()
    await factory.wait_for_sync()
    assert informer.has_synced() and factory.has_synced()
    assert informer.cache.get("ns/a") is not None


async def test_an_informer_requested_after_start_is_started(cluster: Cluster, client: Client, factory: InformerFactory) -> None:
    factory.start()
    late = factory.informer(POD)
    assert late.running
    await late.wait_for_sync()


async def test_updates_carry_old_and_new_and_the_cache_is_updated_before_handlers_run(
    cluster: Cluster, client: Client, factory: InformerFactory
) -> None:
    informer = factory.informer(CM)
    updates: list[tuple[str, str, bool]] = []

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        cached = informer.cache.get("ns/a")
        updates.append((old["metadata"]["labels"]["v"], new["metadata"]["labels"]["v"], cached is new))

    informer.add_handler(on_update=on_update)
    await client.create(CM, cm("a", v="1"))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    await client.patch(CM, "a", {"metadata": {"labels": {"v": "2"}}}, namespace="ns")
    await eventually(lambda: len(updates) == 1)
    assert updates == [("1", "2", True)]


async def test_a_handler_added_after_sync_is_told_about_every_cached_object(
    cluster: Cluster, client: Client, factory: InformerFactory
) -> None:
    await client.create(CM, cm("a"))
    await client.create(CM, cm("b"))
    informer = factory.informer(CM)
    factory.start()
    await factory.wait_for_sync()
    added: list[str] = []
    informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    assert sorted(added) == ["a", "b"]


async def test_a_failing_handler_does_not_stop_the_others_or_the_informer(
    cluster: Cluster, client: Client, factory: InformerFactory
) -> None:
    informer = factory.informer(CM)

    def boom(_: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    added: list[str] = []
    informer.add_handler(on_add=boom)
    informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    await client.create(CM, cm("a"))
    await client.create(CM, cm("b"))
    await eventually(lambda: added == ["a", "b"])
    assert informer.running


async def test_removed_handlers_get_no_more_events(cluster: Cluster, client: Client, factory: InformerFactory) -> None:
    informer = factory.informer(CM)
    added: list[str] = []
    reg = informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    informer.remove_handler(reg)
    await client.create(CM, cm("a"))
    await eventually(lambda: "ns/a" in informer.cache)
    assert added == []


async def test_the_owner_index_follows_watch_events(cluster: Cluster, client: Client, factory: InformerFactory) -> None:
    informer = factory.informer(CM)
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: cluster.app.open_watches == 1)
    dependent = cm("dep")
    dependent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}]
    await client.create(CM, dependent)
    await eventually(lambda: len(informer.cache.by_index(OWNER_UID_INDEX, "u-1")) == 1)
    await client.delete(CM, "dep", namespace="ns")
    await eventually(lambda: informer.cache.by_index(OWNER_UID_INDEX, "u-1") == [])
