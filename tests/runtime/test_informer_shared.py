"""Shared informers: one watch per kind for any number of handlers, has_synced, handler semantics."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import KindRegistry
from kubeloop.client import Client
from kubeloop.runtime import OWNER_UID_INDEX, InformerFactory
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _fakeapi import FakeApi

REG = KindRegistry()
CM = REG.by_kind("", "ConfigMap")
POD = REG.by_kind("", "Pod")
assert CM is not None and POD is not None


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "data": {}}


async def eventually(cond: Callable[[], bool], *, turns: int = 2000) -> None:
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
async def factory(api: FakeApi) -> AsyncIterator[InformerFactory]:
    clock = FakeClock()
    async with Client.from_asgi(api, clock=clock) as client:
        f = InformerFactory(client, namespace="", clock=clock)
        yield f
        await f.stop()


async def test_two_controllers_watching_a_kind_share_one_list_and_one_watch(
    api: FakeApi, factory: InformerFactory
) -> None:
    first, second = factory.informer(CM), factory.informer(CM)
    assert first is second
    seen_a: list[str] = []
    seen_b: list[str] = []
    first.add_handler(on_add=lambda o: seen_a.append(o["metadata"]["name"]))
    second.add_handler(on_add=lambda o: seen_b.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    api.seed(CM, cm("x"))
    await eventually(lambda: seen_a == ["x"] and seen_b == ["x"])
    assert api.watch_count == 1
    assert first.reflector.lists == 1


async def test_different_selectors_or_kinds_get_their_own_informer(factory: InformerFactory) -> None:
    assert factory.informer(CM) is not factory.informer(CM, label_selector="a=b")
    assert factory.informer(CM) is not factory.informer(POD)
    assert len(factory.informers) == 3


async def test_has_synced_turns_true_only_after_the_first_list(api: FakeApi, factory: InformerFactory) -> None:
    api.seed(CM, cm("a"))
    informer = factory.informer(CM)
    assert not informer.has_synced() and factory.has_synced() is False
    factory.start()
    await factory.wait_for_sync()
    assert informer.has_synced() and factory.has_synced()
    assert informer.cache.get("default/a") is not None


async def test_an_informer_requested_after_start_is_started(api: FakeApi, factory: InformerFactory) -> None:
    factory.start()
    late = factory.informer(POD)
    assert late.running
    await late.wait_for_sync()


async def test_updates_carry_old_and_new_and_the_cache_is_updated_before_handlers_run(
    api: FakeApi, factory: InformerFactory
) -> None:
    informer = factory.informer(CM)
    updates: list[tuple[str, str, bool]] = []

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        cached = informer.cache.get("default/a")
        updates.append((old["metadata"]["labels"]["v"], new["metadata"]["labels"]["v"], cached is new))

    informer.add_handler(on_update=on_update)
    api.seed(CM, cm("a", v="1"))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    key = ("", "configmaps", "default", "a")
    api._replace(CM, key, {**api.objects[key], "metadata": {**api.objects[key]["metadata"], "labels": {"v": "2"}}})
    await eventually(lambda: len(updates) == 1)
    assert updates == [("1", "2", True)]


async def test_a_handler_added_after_sync_is_told_about_every_cached_object(
    api: FakeApi, factory: InformerFactory
) -> None:
    api.seed(CM, cm("a"))
    api.seed(CM, cm("b"))
    informer = factory.informer(CM)
    factory.start()
    await factory.wait_for_sync()
    added: list[str] = []
    informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    assert sorted(added) == ["a", "b"]


async def test_a_failing_handler_does_not_stop_the_others_or_the_informer(
    api: FakeApi, factory: InformerFactory
) -> None:
    informer = factory.informer(CM)

    def boom(_: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    added: list[str] = []
    informer.add_handler(on_add=boom)
    informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    api.seed(CM, cm("a"))
    api.seed(CM, cm("b"))
    await eventually(lambda: added == ["a", "b"])
    assert informer.running


async def test_removed_handlers_get_no_more_events(api: FakeApi, factory: InformerFactory) -> None:
    informer = factory.informer(CM)
    added: list[str] = []
    reg = informer.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]))
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    informer.remove_handler(reg)
    api.seed(CM, cm("a"))
    await eventually(lambda: "default/a" in informer.cache)
    assert added == []


async def test_the_owner_index_follows_watch_events(api: FakeApi, factory: InformerFactory) -> None:
    informer = factory.informer(CM)
    factory.start()
    await factory.wait_for_sync()
    await eventually(lambda: len(api.watchers) == 1)
    dependent = cm("dep")
    dependent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}]
    api.seed(CM, dependent)
    await eventually(lambda: len(informer.cache.by_index(OWNER_UID_INDEX, "u-1")) == 1)
    api.remove(CM, "default", "dep")
    await eventually(lambda: informer.cache.by_index(OWNER_UID_INDEX, "u-1") == [])
