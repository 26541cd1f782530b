"""Watches deliver every change after a revision, in order, resume across restarts, and end with Compacted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from kubeloop.store import Compacted, SqliteStore


def value(text: str) -> Callable[[int], bytes]:
    """A render function that embeds the revision, as the server does with resourceVersion."""
    return lambda rev: f"{text}@{rev}".encode()


async def test_watch_replays_history_then_follows_live_changes(store: SqliteStore) -> None:
    await store.create("/r/a", value("a"))
    start = store.revision
    await store.create("/r/b", value("b"))
    w = store.watch("/r/", after=start)
    await store.delete("/r/a", expected_revision=None)
    await store.create("/x/other", value("x"))
    events = [await w.__anext__(), await w.__anext__()]
    assert [(e.type, e.kv.key, e.revision) for e in events] == [("PUT", "/r/b", 2), ("DELETE", "/r/a", 3)]
    assert events[1].prev is not None and events[1].prev.value == b"a@1"
    w.close()


async def test_next_batch_returns_everything_pending_at_once(store: SqliteStore) -> None:
    w = store.watch("/r/", after=0)
    await asyncio.gather(*(store.create(f"/r/{i}", value(str(i))) for i in range(20)))
    batch = await w.next_batch()
    assert [e.revision for e in batch] == list(range(1, 21))
    w.close()
    assert await w.next_batch() == []


async def test_each_watcher_gets_exactly_its_prefix_out_of_one_mixed_batch(store: SqliteStore) -> None:
    # One batch (the writes are queued together) with keys under several prefixes, one of them
    # holding a NUL followed by another watcher's prefix: a key is delivered to a watcher if and only
    # if it starts with the watcher's prefix, whatever else it holds.
    keys = ["/a/1", "/b/1", "/a/2", "/c/x\0/b/y", "/ab", "/b\0/a/", "/a/3"]
    prefixes = ["/a/", "/b/", "/c/", "/d/", "/a", ""]
    watches = {p: store.watch(p, after=0) for p in prefixes}
    await asyncio.gather(*(store.create(k, value(k)) for k in keys))
    assert store.batches_committed == 1
    for prefix, w in watches.items():
        got = [e.kv.key for e in w.poll()]
        assert got == [k for k in keys if k.startswith(prefix)], prefix
        w.close()


async def test_watch_from_a_compacted_revision_is_refused(store: SqliteStore) -> None:
    for i in range(5):
        await store.create(f"/r/{i}", value(str(i)))
    await store.compact(3)
    with pytest.raises(Compacted):
        store.watch("/r/", after=2)
    with pytest.raises(Compacted):
        await store.range("/r/", revision=2)
    w = store.watch("/r/", after=3)
    assert [(await w.__anext__()).revision, (await w.__anext__()).revision] == [4, 5]
    w.close()


async def test_a_slow_watcher_is_ended_with_compacted_not_unbounded_memory(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db", watch_buffer=10)
    try:
        w = s.watch("/r/", after=0)
        for i in range(25):
            await s.create(f"/r/{i}", value(str(i)))
        with pytest.raises(Compacted):
            await w.next_batch()
    finally:
        await s.close()


async def test_watch_resumes_from_a_revision_after_restart(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    a = await s.create("/r/a", value("a"))
    await s.update("/r/a", value("a2"), expected_revision=a.mod_revision)
    await s.delete("/r/a", expected_revision=None)
    await s.close()
    s = await SqliteStore.open(tmp_path / "db")
    try:
        w = s.watch("/r/", after=1)
        first, second = await w.__anext__(), await w.__anext__()
        assert (first.type, first.revision, first.prev and first.prev.value) == ("PUT", 2, b"a@1")
        assert (second.type, second.revision) == ("DELETE", 3)
        w.close()
    finally:
        await s.close()


async def test_history_is_compacted_automatically_past_the_window(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db", history=10)
    try:
        for i in range(30):
            await s.create(f"/r/{i}", value(str(i)))
        assert s.compacted_revision > 0
        assert s.revision - s.compacted_revision <= 12
        assert len((await s.range("/r/")).items) == 30
        with pytest.raises(Compacted):
            s.watch("/r/", after=1)
    finally:
        await s.close()
    s = await SqliteStore.open(tmp_path / "db", history=10)
    try:
        assert len((await s.range("/r/")).items) == 30 and s.revision == 30
    finally:
        await s.close()


async def test_closing_the_store_ends_open_watches(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    w = s.watch("/r/", after=0)
    waiter = asyncio.create_task(w.next_batch())
    await asyncio.sleep(0)
    await s.close()
    assert await waiter == []


async def test_poll_returns_what_is_pending_without_waiting(store: SqliteStore) -> None:
    w = store.watch("/r/", after=0)
    assert w.poll() == []  # nothing yet: no wait
    await store.create("/r/a", value("a"))
    await store.create("/x/other", value("x"))
    await store.create("/r/b", value("b"))
    assert [(e.kv.key, e.revision) for e in w.poll()] == [("/r/a", 1), ("/r/b", 3)]
    assert w.poll() == []  # handed out once
    w.close()
    assert w.poll() == []


async def test_a_change_is_pending_on_the_watch_as_soon_as_the_revision_reports_it(store: SqliteStore) -> None:
    # The contract an exact cache relies on: whoever sees the revision move, before the writer is
    # answered, finds the change in poll() (the RBAC authorizer checks its watch only when it moved).
    w = store.watch("/r/", after=0)
    seen: list[tuple[int, list[int]]] = []

    async def observer() -> None:
        while store.revision == 0:
            await asyncio.sleep(0)
        seen.append((store.revision, [e.revision for e in w.poll()]))

    watching = asyncio.create_task(observer())
    await asyncio.sleep(0)
    writer = asyncio.create_task(store.create("/r/a", value("a")))
    await asyncio.wait([watching])
    assert seen == [(1, [1])]
    await writer
    w.close()


async def test_poll_of_a_watcher_that_fell_behind_is_compacted(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db", watch_buffer=10)
    try:
        w = s.watch("/r/", after=0)
        for i in range(25):
            await s.create(f"/r/{i}", value(str(i)))
        with pytest.raises(Compacted):
            w.poll()
    finally:
        await s.close()
