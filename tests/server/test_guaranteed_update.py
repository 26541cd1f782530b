"""``guaranteed_update`` on a real store: a lost race reads afresh and keeps the other writer's change
(upstream's GuaranteedUpdate), a key deleted mid-race is ``missing()``, retries are bounded, dry-run stores
nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.api import ApiError, NotFound
from kubeloop.server._state import guaranteed_update, renderer
from kubeloop.store import SqliteStore

from ._patchable import patchable_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Any]:
    """The real store, whose ``update`` these tests replace to lose a race (see ``_patchable``)."""
    async with patchable_store(tmp_path) as s:
        yield s


KEY = "/registry/core/pods/default/p"


def _missing() -> ApiError:
    return NotFound('pods "p" not found', details={"name": "p", "kind": "pods"})


async def _seed(store: SqliteStore) -> int:
    kv = await store.create(KEY, renderer({"metadata": {"name": "p", "labels": {}}, "spec": {}}))
    return kv.mod_revision


async def _current(store: SqliteStore) -> dict[str, Any]:
    kv = await store.get(KEY)
    assert kv is not None
    decoded: dict[str, Any] = orjson.loads(kv.value)
    return decoded


async def test_a_lost_race_reads_again_and_keeps_the_other_writers_change(store: SqliteStore) -> None:
    await _seed(store)
    seen: list[dict[str, Any]] = []

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(orjson.loads(orjson.dumps(obj)))
        obj["spec"]["nodeName"] = "node-1"
        return obj

    original_update = store.update
    beaten = False

    async def beaten_once(key: str, render: Any, *, expected_revision: int | None) -> Any:
        nonlocal beaten
        if not beaten:
            # Another writer commits between our read and our compare-and-swap.
            beaten = True
            other = await _current(store)
            other["metadata"]["labels"]["other"] = "yes"
            await original_update(key, renderer(other), expected_revision=expected_revision)
        return await original_update(key, render, expected_revision=expected_revision)

    store.update = beaten_once  # type: ignore[method-assign]
    try:
        assert await guaranteed_update(store, KEY, mutate, missing=_missing) is True
    finally:
        store.update = original_update  # type: ignore[method-assign]
    assert len(seen) == 2, "the lost race is retried once, on a fresh read"
    assert seen[0]["metadata"]["labels"] == {}
    assert seen[1]["metadata"]["labels"] == {"other": "yes"}, "the retry sees the winner's write"
    final = await _current(store)
    assert final["metadata"]["labels"] == {"other": "yes"}
    assert final["spec"] == {"nodeName": "node-1"}


async def test_a_key_deleted_during_the_race_is_missing(store: SqliteStore) -> None:
    await _seed(store)

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    original_update = store.update

    async def delete_first(key: str, render: Any, *, expected_revision: int | None) -> Any:
        await store.delete(key, expected_revision=None)
        return await original_update(key, render, expected_revision=expected_revision)

    store.update = delete_first  # type: ignore[method-assign]
    try:
        with pytest.raises(NotFound):
            await guaranteed_update(store, KEY, mutate, missing=_missing)
    finally:
        store.update = original_update  # type: ignore[method-assign]
    assert await store.get(KEY) is None


async def test_every_attempt_lost_is_false_and_bounded(store: SqliteStore) -> None:
    await _seed(store)
    reads = 0

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return obj

    original_update = store.update

    async def always_beaten(key: str, render: Any, *, expected_revision: int | None) -> Any:
        # Someone else writes first every time: our expected revision is always stale.
        current = await _current(store)
        kv = await store.get(KEY)
        assert kv is not None
        await original_update(key, renderer(current), expected_revision=kv.mod_revision)
        return await original_update(key, render, expected_revision=expected_revision)

    store.update = always_beaten  # type: ignore[method-assign]
    try:
        assert await guaranteed_update(store, KEY, mutate, missing=_missing, attempts=3) is False
    finally:
        store.update = original_update  # type: ignore[method-assign]
    assert reads == 3


async def test_dry_run_mutates_once_and_stores_nothing(store: SqliteStore) -> None:
    revision = await _seed(store)

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["nodeName"] = "node-1"
        return obj

    assert await guaranteed_update(store, KEY, mutate, missing=_missing, dry_run=True) is True
    kv = await store.get(KEY)
    assert kv is not None and kv.mod_revision == revision
    assert (await _current(store))["spec"] == {}


async def test_an_absent_key_is_missing(store: SqliteStore) -> None:
    with pytest.raises(NotFound):
        await guaranteed_update(store, KEY, lambda obj: obj, missing=_missing)
