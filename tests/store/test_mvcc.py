"""The store keeps etcd's MVCC contract: one global revision, CAS writes, reads of committed state."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kubeloop.store import KeyExists, KeyNotFound, RevisionMismatch, SqliteStore, StoreClosed, StoreError


def value(text: str) -> Callable[[int], bytes]:
    """A render function that embeds the revision, as the server does with resourceVersion."""
    return lambda rev: f"{text}@{rev}".encode()


async def test_every_write_gets_the_next_global_revision(store: SqliteStore) -> None:
    a = await store.create("/r/a", value("a"))
    b = await store.create("/r/b", value("b"))
    a2 = await store.update("/r/a", value("a2"), expected_revision=a.mod_revision)
    assert [a.mod_revision, b.mod_revision, a2.mod_revision] == [1, 2, 3]
    assert a2.create_revision == 1
    assert store.revision == 3


async def test_render_receives_the_revision_the_write_commits_at(store: SqliteStore) -> None:
    kv = await store.create("/r/a", value("a"))
    assert kv.value == b"a@1"
    assert (await store.get("/r/a")) == kv


async def test_create_of_an_existing_key_fails_and_changes_nothing(store: SqliteStore) -> None:
    await store.create("/r/a", value("a"))
    with pytest.raises(KeyExists):
        await store.create("/r/a", value("b"))
    assert store.revision == 1
    got = await store.get("/r/a")
    assert got is not None and got.value == b"a@1"


async def test_update_with_a_stale_revision_is_rejected(store: SqliteStore) -> None:
    kv = await store.create("/r/a", value("a"))
    await store.update("/r/a", value("b"), expected_revision=kv.mod_revision)
    with pytest.raises(RevisionMismatch) as info:
        await store.update("/r/a", value("c"), expected_revision=kv.mod_revision)
    assert info.value.actual == 2
    got = await store.get("/r/a")
    assert got is not None and got.value == b"b@2"


async def test_unconditional_update_and_delete_of_missing_keys_fail(store: SqliteStore) -> None:
    with pytest.raises(KeyNotFound):
        await store.update("/r/x", value("x"), expected_revision=None)
    with pytest.raises(KeyNotFound):
        await store.delete("/r/x", expected_revision=None)
    assert store.revision == 0


async def test_delete_checks_the_revision_and_keeps_the_last_value_in_history(store: SqliteStore) -> None:
    kv = await store.create("/r/a", value("a"))
    with pytest.raises(RevisionMismatch):
        await store.delete("/r/a", expected_revision=99)
    gone = await store.delete("/r/a", expected_revision=kv.mod_revision, render=value("tomb"))
    assert gone.mod_revision == 2 and gone.value == b"tomb@2"
    assert await store.get("/r/a") is None


async def test_range_returns_keys_under_a_prefix_in_order_with_pages(store: SqliteStore) -> None:
    for name in ["c", "a", "b", "d"]:
        await store.create(f"/r/ns/{name}", value(name))
    await store.create("/r/other", value("o"))
    await store.create("/s/x", value("x"))
    page = await store.range("/r/ns/", limit=2)
    assert [kv.key for kv in page.items] == ["/r/ns/a", "/r/ns/b"] and page.more
    assert page.count == 4, "count is the whole range, limit ignored"
    rest = await store.range("/r/ns/", start_after="/r/ns/b", limit=2)
    assert [kv.key for kv in rest.items] == ["/r/ns/c", "/r/ns/d"] and not rest.more
    assert rest.count == 2, "count starts after start_after"
    assert rest.revision == store.revision


async def test_range_at_an_older_revision_sees_the_snapshot(store: SqliteStore) -> None:
    a = await store.create("/r/a", value("a"))
    await store.create("/r/b", value("b"))
    snapshot = store.revision
    await store.update("/r/a", value("a2"), expected_revision=a.mod_revision)
    await store.delete("/r/b", expected_revision=None)
    await store.create("/r/c", value("c"))
    old = await store.range("/r/", revision=snapshot)
    assert [(kv.key, kv.value) for kv in old.items] == [("/r/a", b"a@1"), ("/r/b", b"b@2")]
    assert old.revision == snapshot
    paged = await store.range("/r/", limit=1, revision=snapshot)
    assert [kv.key for kv in paged.items] == ["/r/a"] and paged.more and paged.count == 2
    assert (await store.get("/r/b", revision=snapshot)) is not None
    now = await store.range("/r/")
    assert [kv.key for kv in now.items] == ["/r/a", "/r/c"]


async def test_concurrent_writers_share_commits_and_lose_nothing(store: SqliteStore) -> None:
    await asyncio.gather(*(store.create(f"/r/{i:04d}", value(str(i))) for i in range(300)))
    assert store.revision == 300
    assert len((await store.range("/r/")).items) == 300
    assert store.batches_committed < 300  # group commit: writers shared transactions


async def test_concurrent_compare_and_swap_increments_lose_no_update(store: SqliteStore) -> None:
    await store.create("/r/counter", lambda rev: b"0")

    async def increment() -> None:
        while True:
            kv = await store.get("/r/counter")
            assert kv is not None
            n = int(kv.value) + 1
            try:
                await store.update("/r/counter", lambda rev, n=n: str(n).encode(), expected_revision=kv.mod_revision)
                return
            except RevisionMismatch:
                continue

    await asyncio.gather(*(increment() for _ in range(50)))
    kv = await store.get("/r/counter")
    assert kv is not None and kv.value == b"50"


async def test_a_write_whose_caller_is_cancelled_is_still_committed(store: SqliteStore) -> None:
    writing = asyncio.ensure_future(store.create("/r/a", value("a")))
    await asyncio.sleep(0)  # queued, not yet committed
    writing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writing
    watch = store.watch("/r/", after=0)
    async with asyncio.timeout(10):
        event = await anext(aiter(watch))
    watch.close()
    assert event.type == "PUT" and event.kv.value == b"a@1"
    assert await store.get("/r/a") == event.kv


async def test_a_render_that_fails_fails_only_its_own_write(store: SqliteStore) -> None:
    def boom(rev: int) -> bytes:
        raise ValueError("cannot encode")

    results = await asyncio.gather(
        store.create("/r/a", value("a")), store.create("/r/b", boom), store.create("/r/c", value("c")),
        return_exceptions=True,
    )
    assert isinstance(results[1], ValueError)
    assert [kv.key for kv in (await store.range("/r/")).items] == ["/r/a", "/r/c"]
    assert store.revision == 2


async def test_state_and_revisions_survive_a_restart(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    a = await s.create("/r/a", value("a"))
    await s.create("/r/b", value("b"))
    await s.delete("/r/b", expected_revision=None)
    await s.close()
    s = await SqliteStore.open(tmp_path / "db")
    try:
        assert s.revision == 3
        assert [kv.key for kv in (await s.range("/r/")).items] == ["/r/a"]
        a2 = await s.update("/r/a", value("a2"), expected_revision=a.mod_revision)
        assert a2.mod_revision == 4
    finally:
        await s.close()


def _failing_disk(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next commits fail as SQLite does when the disk is full or gone."""

    def write_rows(rows: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "_write_rows", write_rows)


@pytest.mark.interpreted  # a full disk is simulated by replacing SqliteStore._write_rows
async def test_a_failed_commit_acknowledges_nothing_and_changes_nothing(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create("/r/a", value("a"))
    with monkeypatch.context() as patch:
        _failing_disk(store, patch)
        with pytest.raises(StoreError, match="commit failed"):
            await store.create("/r/b", value("b"))
    assert store.revision == 1
    assert await store.get("/r/b") is None
    b = await store.create("/r/b", value("b"))
    assert b.mod_revision == 2


@pytest.mark.interpreted  # a full disk is simulated by replacing SqliteStore._write_rows
async def test_close_returns_when_the_last_commit_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    _failing_disk(s, monkeypatch)
    write = asyncio.ensure_future(s.create("/r/a", value("a")))
    await asyncio.sleep(0)  # queued; the committer has been woken but not yet run
    # close in this task: it asks to stop before the committer takes the batch. A liveness guard,
    # not a time bound (an expired guard cancels the wait and raises TimeoutError).
    async with asyncio.timeout(10) as guard:
        await s.close()
    assert not guard.expired()
    with pytest.raises(StoreError, match="commit failed"):
        await write


async def test_a_cancelled_close_still_closes_and_a_later_close_waits_for_it(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    write = asyncio.ensure_future(s.create("/r/a", value("a")))
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(s.close())
    await asyncio.sleep(0)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing  # the caller's wait is cancelled, as asked
    await s.close()  # waits for the same closing, which went on
    assert (await write).mod_revision == 1  # the queued write was committed and answered
    with pytest.raises(StoreClosed):
        await s.create("/r/b", value("b"))
    reopened = await SqliteStore.open(tmp_path / "db")
    try:
        assert (await reopened.get("/r/a")) is not None
    finally:
        await reopened.close()


async def test_a_batch_larger_than_one_statement_commits_whole_and_in_order(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    batches = s.batches_committed
    kvs = await asyncio.gather(*(s.create(f"/r/{i:04}", value(str(i))) for i in range(300)))
    assert s.batches_committed == batches + 1  # all 300 queued before the committer ran: one transaction
    assert [kv.mod_revision for kv in kvs] == list(range(1, 301))
    await s.close()
    s = await SqliteStore.open(tmp_path / "db")
    try:
        items = (await s.range("/r/")).items
        assert [(kv.key, kv.value) for kv in items] == [(f"/r/{i:04}", f"{i}@{i + 1}".encode()) for i in range(300)]
        assert s.revision == 300
    finally:
        await s.close()


async def test_the_revision_survives_a_restart_after_its_rows_were_compacted_away(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    await s.create("/r/a", value("a"))
    await s.delete("/r/a", expected_revision=None)
    await s.compact(s.revision)  # drops the deletion row, the newest row there was
    await s.close()
    s = await SqliteStore.open(tmp_path / "db")
    try:
        assert s.revision == 2
        assert (await s.create("/r/b", value("b"))).mod_revision == 3
    finally:
        await s.close()


async def test_close_ends_the_sqlite_thread(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    await s.create("/r/a", value("a"))
    thread = s._jobs_thread
    assert thread.is_alive()
    await s.close()
    thread.join(10)  # a liveness guard: it ends once the close's last job is done
    assert not thread.is_alive()


async def test_a_store_that_cannot_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()  # a directory where the database file should be
    before = {t for t in threading.enumerate() if t.name == "kubeloop-sqlite"}
    with pytest.raises(sqlite3.Error):
        await SqliteStore.open(tmp_path / "db")
    for thread in {t for t in threading.enumerate() if t.name == "kubeloop-sqlite"} - before:
        thread.join(10)
        assert not thread.is_alive()
