"""Objects written straight into a store, past the API server: the old data a test needs.

Data stored by an older server (duplicate ``ownerReferences`` from before 1.20, a PersistentVolume
without the defaults a newer server fills, a quantity in a non-canonical form) cannot be made through
the write path, which would fix it. These helpers write a JSON object under a store key as it is,
with ``metadata.resourceVersion`` set to the revision it is stored at, as the server stores its own.
They never validate, default or admit; the watch sees an ordinary PUT.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from kubeloop.store import KeyValue, Store

__all__ = ["rewrite_stored", "store_as_is"]


def _render(obj: dict[str, Any]) -> Callable[[int], bytes]:
    def render(revision: int) -> bytes:
        obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
        return orjson.dumps(obj)

    return render


async def store_as_is(store: Store, key: str, obj: dict[str, Any]) -> KeyValue:
    """Create ``obj`` under ``key`` as it is (its ``resourceVersion`` is set to the new revision)."""
    return await store.create(key, _render(obj))


async def rewrite_stored(store: Store, key: str, change: Callable[[dict[str, Any]], None]) -> KeyValue:
    """Read the object under ``key``, let ``change`` edit it in place, and store it back as it is
    (compare-and-swap on the revision read; a missing key is :class:`LookupError`)."""
    kv = await store.get(key)
    if kv is None:
        raise LookupError(f"nothing is stored under {key}")
    obj = orjson.loads(kv.value)
    change(obj)
    return await store.update(key, _render(obj), expected_revision=kv.mod_revision)
