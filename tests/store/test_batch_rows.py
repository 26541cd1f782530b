"""A committed batch is on disk row for row, whatever its size: one INSERT statement for up to 128 rows
(its own transaction), several statements in one explicit transaction past that."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from kubeloop.store import SqliteStore


@pytest.mark.parametrize("size", [1, 2, 128, 129, 300])
async def test_a_batch_of_creates_is_one_transaction_with_every_row_on_disk(tmp_path: Path, size: int) -> None:
    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    try:
        batches = s.batches_committed
        kvs = await asyncio.gather(
            *(s.create(f"/r/{i:04d}", lambda rev, i=i: f"v{i}@{rev}".encode()) for i in range(size))
        )
        assert s.batches_committed == batches + 1
    finally:
        await s.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rev, key, type, create_rev, prev_rev, value FROM revisions ORDER BY rev").fetchall()
    assert rows == [(kv.mod_revision, kv.key, 0, kv.mod_revision, None, kv.value) for kv in kvs]
    assert [kv.value for kv in kvs] == [f"v{i}@{i + 1}".encode() for i in range(size)]


async def test_a_batch_mixing_updates_and_deletes_is_on_disk_with_previous_revisions(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    try:
        a = await s.create("/r/a", lambda rev: b"a")
        b = await s.create("/r/b", lambda rev: b"b")
        await asyncio.gather(
            s.update("/r/a", lambda rev: b"a2", expected_revision=a.mod_revision),
            s.delete("/r/b", expected_revision=b.mod_revision),
            s.create("/r/c", lambda rev: b"c"),
        )
    finally:
        await s.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rev, key, type, create_rev, prev_rev, value FROM revisions ORDER BY rev").fetchall()
    assert rows == [
        (1, "/r/a", 0, 1, None, b"a"),
        (2, "/r/b", 0, 2, None, b"b"),
        (3, "/r/a", 0, 1, 1, b"a2"),
        (4, "/r/b", 1, 2, 2, b"b"),
        (5, "/r/c", 0, 5, None, b"c"),
    ]


async def test_batches_of_every_size_are_written_by_a_few_padded_statements_and_no_padding_is_stored(
    tmp_path: Path,
) -> None:
    # Batches of 1 to 130 rows (and one past two statements' worth) go through the INSERTs of eight sizes
    # (the powers of two up to 128), each padded with rows the statement leaves out: every row written
    # is on disk once, in order, and nothing else is (no row of the padding, whose revision is 0).
    from kubeloop.store import _sqlite

    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    kvs = []
    try:
        for size in [*range(1, 131), 300]:
            kvs += await asyncio.gather(
                *(s.create(f"/r/{size:03d}/{i:03d}", lambda rev, i=i: b"v%d" % i) for i in range(size))
            )
    finally:
        await s.close()
    assert set(_sqlite._INSERT_STATEMENTS) == {1, 2, 4, 8, 16, 32, 64, 128}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rev, key, type, create_rev, prev_rev, value FROM revisions ORDER BY rev").fetchall()
    assert rows == [(kv.mod_revision, kv.key, 0, kv.mod_revision, None, kv.value) for kv in kvs]
    assert len(rows) == sum(range(1, 131)) + 300
