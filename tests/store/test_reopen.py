"""Opening a database rebuilds exactly the state, history and watch events the store had before it closed,
for a database this version wrote and for one written before the store dropped its index on ``key``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from kubeloop.store import KeyValue, SqliteStore, StoreEvent


def _render(text: str) -> Callable[[int], bytes]:
    return lambda rev: f"{text}@{rev}".encode()


async def _write_history(path: Path) -> None:
    """Creates, updates, deletes, a key deleted and created again, a compaction in the middle."""
    s = await SqliteStore.open(path)
    try:
        a = await s.create("/r/a", _render("a"))
        b = await s.create("/r/b", _render("b"))
        c = await s.create("/r/c", _render("c"))
        a = await s.update("/r/a", _render("a2"), expected_revision=a.mod_revision)
        await s.delete("/r/b", expected_revision=b.mod_revision)
        await s.compact(s.revision - 1)  # the deletion of /r/b stays above the compaction point
        await s.create("/r/b", _render("b again"))
        a = await s.update("/r/a", _render("a3"), expected_revision=a.mod_revision)
        await s.delete("/r/c", expected_revision=c.mod_revision, render=_render("c gone"))
        await s.create("/r/d", _render("d"))
    finally:
        await s.close()


_View = tuple[int, int, list[KeyValue], list[list[KeyValue]], list[tuple[str, KeyValue, KeyValue | None]]]


async def _view(s: SqliteStore) -> _View:
    """Everything a reader can see: revisions, the current state, each older state still in the window,
    and the watch events from the compaction point on."""
    states = [(await s.range("/r/", revision=r)).items for r in range(s.compacted_revision, s.revision + 1)]
    watch = s.watch("/r/", after=s.compacted_revision)
    events: list[StoreEvent] = watch.poll()
    watch.close()
    return (
        s.revision,
        s.compacted_revision,
        (await s.range("/r/")).items,
        states,
        [(e.type, e.kv, e.prev) for e in events],
    )


async def _reopened_view(path: Path) -> _View:
    s = await SqliteStore.open(path)
    try:
        return await _view(s)
    finally:
        await s.close()


async def test_a_reopened_store_shows_what_it_showed_before_closing(tmp_path: Path) -> None:
    path = tmp_path / "db"
    await _write_history(path)
    s = await SqliteStore.open(path)
    try:
        before = await _view(s)
        kv = await s.create("/r/e", _render("e"))
    finally:
        await s.close()
    after = await _reopened_view(path)
    assert after[0] == kv.mod_revision == before[0] + 1
    assert after[2] == [*before[2], kv]
    assert after[3][:-1] == before[3]
    assert after[4][:-1] == before[4]
    assert after[4][-1] == ("PUT", kv, None)
    assert [e[0] for e in before[4]] == ["DELETE", "PUT", "PUT", "DELETE", "PUT"]


async def test_a_database_with_the_former_key_index_opens_the_same_and_loses_the_index(tmp_path: Path) -> None:
    path = tmp_path / "db"
    await _write_history(path)
    want = await _reopened_view(path)
    with sqlite3.connect(path) as db:  # the index earlier versions created and kept
        db.execute("CREATE INDEX revisions_key_rev ON revisions (key, rev)")
    assert await _reopened_view(path) == want
    with sqlite3.connect(path) as db:
        indexes = db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'revisions'").fetchall()
    assert indexes == []


async def test_rows_hold_null_for_no_previous_revision_and_the_value_as_a_blob(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = await SqliteStore.open(path)
    try:
        a = await s.create("/r/a", _render("a"))
        await s.update("/r/a", _render("a2"), expected_revision=a.mod_revision)
        await s.delete("/r/a", expected_revision=None)
    finally:
        await s.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rev, prev_rev, typeof(prev_rev), value, typeof(value) FROM revisions ORDER BY rev").fetchall()
    assert rows == [
        (1, None, "null", b"a@1", "blob"),
        (2, 1, "integer", b"a2@2", "blob"),
        (3, 2, "integer", b"a2@2", "blob"),
    ]
