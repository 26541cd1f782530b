"""The store keeps every live value in memory: each at its own size, whatever allocation it came in."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import orjson

from kubeloop.store import SqliteStore


async def test_a_stored_value_holds_its_own_size_not_the_allocation_orjson_returned_it_in(store: SqliteStore) -> None:
    """orjson hands back a small document in an 8 KiB allocation; kept as it is, a 900-byte ConfigMap
    held 8.2 KB for as long as it lived (measured with tracemalloc, which sees the allocation)."""
    document = {"metadata": {"name": "x"}, "data": {"k": "v" * 850}}
    size = len(orjson.dumps(document))
    keys = 400

    def render(revision: int) -> bytes:
        return orjson.dumps({**document, "revision": revision})

    await store.create("/r/warm", render)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for start in range(0, keys, 100):
            await asyncio.gather(*(store.create(f"/r/k{n}", render) for n in range(start, start + 100)))
        gc.collect()
        held = (tracemalloc.get_traced_memory()[0] - before) / keys
    finally:
        tracemalloc.stop()
    assert None not in [await store.get(f"/r/k{n}") for n in range(0, keys, 37)]
    assert held < 2 * size  # the value itself plus the index, ring and key list entries


async def test_the_history_window_adds_no_collected_container_per_write(store: SqliteStore) -> None:
    """The cyclic collector walks every tracked container in each collection. A write leaves one for
    as long as its key lives (its ``KeyValue``, a tuple subclass the collector never untracks); the
    history window (10,000 writes by default) keeps that same object, and no (type, kv, prev) tuple
    around it, which would be one more container walked per write in the window."""
    writes = 2000

    def render(revision: int) -> bytes:
        return b'{"revision": %d}' % revision

    await store.create("/r/warm", render)
    gc.collect()
    before = len(gc.get_objects())
    for start in range(0, writes, 100):
        await asyncio.gather(*(store.create(f"/r/k{n}", render) for n in range(start, start + 100)))
    gc.collect()
    added = (len(gc.get_objects()) - before) / writes  # the last batch's tasks and tuples may linger
    assert [e.kv.key for e in store.watch("/r/k", after=1).poll()] == [f"/r/k{n}" for n in range(writes)]
    assert added < 1.5  # the KeyValue of each new key, nothing per write in the window (it was 2)
