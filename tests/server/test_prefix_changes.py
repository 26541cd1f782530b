"""PrefixChanges and PrefixObjects on a real store: what RBAC's snapshot, the Priority plugin's classes and the
admission webhooks' and policies' configurations follow."""

from __future__ import annotations

from pathlib import Path

from kubeloop.server._prefix_changes import PrefixChanges, PrefixObjects
from kubeloop.store import KeyValue, SqliteStore


async def test_poll_returns_the_prefix_changes_since_the_last_look_and_none_before_start(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db")
    try:
        changes = PrefixChanges(store, "/registry/a/")
        assert changes.poll() is None  # never started: read everything first
        await store.create("/registry/a/before", lambda rev: b"0")
        changes.start()
        assert changes.poll() == []  # nothing written since start
        await store.create("/registry/b/other", lambda rev: b"1")
        assert changes.poll() == []  # another prefix moved the revision: an empty poll
        await store.create("/registry/a/x", lambda rev: b"2")
        await store.delete("/registry/a/before", expected_revision=None)
        events = changes.poll()
        assert events is not None
        assert [(e.type, e.kv.key) for e in events] == [("PUT", "/registry/a/x"), ("DELETE", "/registry/a/before")]
        assert changes.poll() == []  # each change is returned once
    finally:
        await store.close()


def _decode(name: str, kv: KeyValue) -> tuple[str, int, bytes]:
    return name, kv.mod_revision, kv.value


async def test_prefix_objects_are_read_once_and_kept_current_by_the_watch(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db")
    try:
        objects = PrefixObjects(store, "/registry/a/", _decode)
        created = await store.create("/registry/a/x", lambda rev: b"0")
        assert objects.current() is None  # nothing read yet
        first = await objects.load()
        assert first == {"x": ("x", created.mod_revision, b"0")}
        loaded = objects.generation
        await store.create("/registry/b/other", lambda rev: b"1")
        assert objects.current() == first and objects.generation == loaded  # another prefix: nothing changed
        updated = await store.update("/registry/a/x", lambda rev: b"2", expected_revision=None)
        await store.create("/registry/a/y", lambda rev: b"3")
        now = objects.current()
        assert now is not None and now["x"] == ("x", updated.mod_revision, b"2") and set(now) == {"x", "y"}
        assert objects.generation > loaded  # derived views know to be made again
        await store.delete("/registry/a/x", expected_revision=None)
        assert set(objects.current() or ()) == {"y"}
    finally:
        await store.close()


async def test_prefix_objects_past_the_watch_buffer_are_read_again(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db", watch_buffer=2)
    try:
        objects = PrefixObjects(store, "/registry/a/", _decode)
        assert await objects.load() == {}
        for i in range(4):  # more changes than the watch holds, none polled meanwhile
            await store.create(f"/registry/a/{i}", lambda rev: b"v")
        assert objects.current() is None  # fell behind: must be read again
        assert set(await objects.load()) == {"0", "1", "2", "3"}
        assert objects.current() is not None
    finally:
        await store.close()
