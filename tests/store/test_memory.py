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
