"""PrefixChanges on a real store: what RBAC's snapshot and the Priority plugin's classes follow."""

from __future__ import annotations

from pathlib import Path

from kubeloop.server._prefix_changes import PrefixChanges
from kubeloop.store import SqliteStore


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
