"""The store against a model: random batches of concurrent writes give the results, revisions, reads,
history and watch events a plain dict with a revision counter gives, before and after a restart."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeloop.store import KeyExists, KeyNotFound, KeyValue, RevisionMismatch, SqliteStore, StoreEvent

_KEYS = [f"/r/{group}/{name}" for group in ("a", "ab", "b") for name in ("x", "y", "xy", "z")]
_OP = st.tuples(st.sampled_from(["create", "update", "delete"]), st.sampled_from(_KEYS), st.none() | st.integers(0, 12))


class _Model:
    def __init__(self) -> None:
        self.state: dict[str, KeyValue] = {}
        self.revision = 0
        self.history: list[tuple[int, dict[str, KeyValue]]] = [(0, {})]
        self.events: list[tuple[str, KeyValue, KeyValue | None]] = []

    def apply(self, kind: str, key: str, expected: int | None) -> KeyValue | type[Exception]:
        current = self.state.get(key)
        if kind == "create" and current is not None:
            return KeyExists
        if kind != "create":
            if current is None:
                return KeyNotFound
            if expected is not None and current.mod_revision != expected:
                return RevisionMismatch
        self.revision += 1
        kv = KeyValue(key, f"{key}@{self.revision}".encode(),
                      current.create_revision if current else self.revision, self.revision)
        if kind == "delete":
            del self.state[key]
        else:
            self.state[key] = kv
        self.events.append(("DELETE" if kind == "delete" else "PUT", kv, current))
        self.history.append((self.revision, dict(self.state)))
        return kv


def _render(key: str) -> object:
    return lambda rev: f"{key}@{rev}".encode()


async def _check_reads(store: SqliteStore, model: _Model) -> None:
    assert store.revision == model.revision
    for key in _KEYS:
        assert await store.get(key) == model.state.get(key)
    for prefix in ("/r/", "/r/a", "/r/a/", "/r/ab/", "/r/c/"):
        want = sorted((k, kv) for k, kv in model.state.items() if k.startswith(prefix))
        got = await store.range(prefix)
        assert [(kv.key, kv) for kv in got.items] == want and got.count == len(want) and not got.more
        if want:
            page = await store.range(prefix, start_after=want[0][0], limit=2)
            assert [kv.key for kv in page.items] == [k for k, _ in want[1:3]]
            assert page.count == len(want) - 1 and page.more == (len(want) > 3)
    for revision, state in model.history[-6:]:
        if revision >= store.compacted_revision:
            old = await store.range("/r/", revision=revision)
            assert [kv for kv in old.items] == [state[k] for k in sorted(state)]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(_OP, min_size=1, max_size=8), min_size=1, max_size=12), st.integers(0, 11))
def test_concurrent_batches_match_the_model(batches: list[list[tuple[str, str, int | None]]], restart_at: int) -> None:
    async def run(path: Path) -> None:
        model = _Model()
        store = await SqliteStore.open(path)
        watch = store.watch("/r/a", after=0)
        everything = store.watch("/r/", after=0)  # a second watcher: one change fanned out to both
        try:
            for number, batch in enumerate(batches):
                calls = []
                for kind, key, expected in batch:
                    if kind == "create":
                        calls.append(store.create(key, _render(key)))  # type: ignore[arg-type]
                    elif kind == "update":
                        calls.append(store.update(key, _render(key), expected_revision=expected))  # type: ignore[arg-type]
                    else:
                        calls.append(store.delete(key, expected_revision=expected, render=_render(key)))  # type: ignore[arg-type]
                results = await asyncio.gather(*calls, return_exceptions=True)
                for (kind, key, expected), result in zip(batch, results, strict=True):
                    want = model.apply(kind, key, expected)
                    if isinstance(want, KeyValue):
                        assert result == want
                    else:
                        assert type(result) is want
                await _check_reads(store, model)
                if number == restart_at:
                    watch.close()
                    await store.close()
                    while await everything.next_batch():  # what was pending, then the end: the store closed it
                        pass
                    store = await SqliteStore.open(path)
                    await _check_reads(store, model)
                    watch = store.watch("/r/a", after=0)
                    everything = store.watch("/r/", after=0)
            events: list[StoreEvent] = []
            while len(events) < sum(1 for _, kv, _ in model.events if kv.key.startswith("/r/a")):
                events.extend(await watch.next_batch())
            assert [(e.type, e.kv, e.prev) for e in events] == [e for e in model.events if e[1].key.startswith("/r/a")]
            events = []
            while len(events) < len(model.events):
                events.extend(await everything.next_batch())
            assert [(e.type, e.kv, e.prev) for e in events] == model.events
        finally:
            everything.close()
            watch.close()
            await store.close()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp) / "db"))
