"""Checkpoints run on the store's second connection and thread, beside the commits: SQLite's automatic
checkpoint (inside the commit that crosses 1,000 WAL frames) is off, the checkpointer copies the WAL back
once about that many pages were written, commits go on while it works, and closing stops it and leaves
no WAL behind."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kubeloop.store import SqliteStore

# A value of one database page: each batch of 100 writes is estimated at 103 pages.
_PAGE_VALUE = b"x" * 4096


async def _write_pages(store: SqliteStore, batches: int, *, start: int = 0) -> None:
    for b in range(start, start + batches):
        await asyncio.gather(*(store.create(f"/r/{b:03d}/{i:03d}", lambda rev: _PAGE_VALUE) for i in range(100)))


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for something another thread does. A liveness guard, not a time bound."""
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.01)


async def test_the_writer_does_not_checkpoint_inside_a_commit(tmp_path: Path) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    try:
        setting = await s._on_thread(lambda: s._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0])  # type: ignore[union-attr]
        assert setting == 0
        await _write_pages(s, 9)  # 927 pages: under the threshold
        assert s.checkpoints_run == 0
        # Every page is still in the WAL: the database file holds only the schema.
        assert (tmp_path / "db").stat().st_size < 100 * 4096
    finally:
        await s.close()


async def test_the_checkpointer_copies_the_wal_back_past_the_threshold(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    try:
        await _write_pages(s, 10)  # 1,030 pages
        await _until(lambda: s.checkpoints_run == 1)
        assert s.checkpoints_failed == 0
        # The pages are in the database file now, and a reader sees every row.
        assert path.stat().st_size >= 1000 * 4096
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM revisions").fetchone()[0] == 1000
        assert (await s.get("/r/009/099")) is not None
    finally:
        await s.close()


@pytest.mark.interpreted  # a slow disk is simulated by replacing SqliteStore._checkpoint
async def test_commits_go_on_while_a_checkpoint_is_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await SqliteStore.open(tmp_path / "db")
    entered, release = threading.Event(), threading.Event()
    checkpoint = s._checkpoint

    def slow_checkpoint(db: sqlite3.Connection) -> None:
        entered.set()
        release.wait(30)
        checkpoint(db)

    monkeypatch.setattr(s, "_checkpoint", slow_checkpoint)
    try:
        await _write_pages(s, 10)
        await _until(entered.is_set)
        # The checkpoint holds its thread; commits still land, and no second checkpoint is asked for
        # while the first is under way, however much is written.
        revision = s.revision
        await _write_pages(s, 12, start=10)
        assert s.revision == revision + 1200
        assert s.checkpoints_run == 0
        release.set()
        await _until(lambda: s.checkpoints_run == 1)
        # What was written meanwhile is still counted: the next commit asks for the next checkpoint.
        await _write_pages(s, 1, start=22)
        await _until(lambda: s.checkpoints_run == 2)
    finally:
        release.set()
        await s.close()


async def test_close_stops_the_checkpointer_and_leaves_no_wal(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    await _write_pages(s, 12)
    thread = s._checkpoint_thread
    assert thread is not None and thread.is_alive()
    await s.close()
    assert not thread.is_alive()
    assert not path.with_name("db-wal").exists()
    reopened = await SqliteStore.open(path)
    try:
        assert reopened.revision == 1200
        assert (await reopened.get("/r/011/099")) is not None
    finally:
        await reopened.close()
