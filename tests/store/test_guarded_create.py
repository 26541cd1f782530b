"""A create guarded by a second key commits only while that key is at the revision the caller read
(etcd ``Txn(If(ModRevision(other) == R, CreateRevision(key) == 0), Then(Put(key)))``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kubeloop.store import GuardChanged, SqliteStore


def value(text: str) -> Callable[[int], bytes]:
    return lambda rev: f"{text}@{rev}".encode()


async def test_guarded_create_commits_while_the_guard_key_is_unchanged(store: SqliteStore) -> None:
    ns = await store.create("/ns/team", value("ns"))
    kv = await store.create("/cm/team/a", value("a"), guard=("/ns/team", ns.mod_revision))
    assert kv.mod_revision == ns.mod_revision + 1
    assert (await store.get("/cm/team/a")) == kv


async def test_guarded_create_fails_after_the_guard_key_changed_and_writes_nothing(store: SqliteStore) -> None:
    ns = await store.create("/ns/team", value("ns"))
    await store.update("/ns/team", value("terminating"), expected_revision=ns.mod_revision)
    revision = store.revision
    with pytest.raises(GuardChanged) as caught:
        await store.create("/cm/team/a", value("a"), guard=("/ns/team", ns.mod_revision))
    assert (caught.value.key, caught.value.expected, caught.value.actual) == ("/ns/team", 1, 2)
    assert await store.get("/cm/team/a") is None
    assert store.revision == revision


async def test_an_absent_guard_key_is_revision_zero(store: SqliteStore) -> None:
    assert (await store.create("/cm/x/a", value("a"), guard=("/ns/x", 0))).mod_revision == 1
    with pytest.raises(GuardChanged):
        await store.create("/cm/x/b", value("b"), guard=("/ns/x", 5))
    ns = await store.create("/ns/x", value("ns"))
    await store.delete("/ns/x", expected_revision=ns.mod_revision)
    with pytest.raises(GuardChanged):
        await store.create("/cm/x/c", value("c"), guard=("/ns/x", ns.mod_revision))


async def test_the_guard_sees_a_change_committed_earlier_in_the_same_batch(store: SqliteStore) -> None:
    """Both writes are queued before the committer runs, so they share one transaction; the update
    comes first, so the create's guard must fail on it, not on the state before the batch."""
    ns = await store.create("/ns/team", value("ns"))
    batches = store.batches_committed
    update = asyncio.ensure_future(store.update("/ns/team", value("terminating"), expected_revision=ns.mod_revision))
    create = asyncio.ensure_future(store.create("/cm/team/a", value("a"), guard=("/ns/team", ns.mod_revision)))
    await asyncio.wait([update, create])
    assert update.result().mod_revision == ns.mod_revision + 1
    assert isinstance(create.exception(), GuardChanged)
    assert store.batches_committed == batches + 1
    assert await store.get("/cm/team/a") is None
