"""The objects of one namespaced built-in resource, by namespace, as current as the store.

The LimitRanger and ResourceQuota admission plugins ask, on every create, "what LimitRanges (or
ResourceQuotas) does this namespace have?". Upstream reads an informer's cache (falling back to a live
list when the cache has none); here :class:`NamespacedObjects` follows the resource's store prefix with a
store watch polled whenever the store's revision moved (what
:class:`~kubeloop.server._prefix_changes.PrefixChanges` does, inlined), so a read is never behind the store's
revision: an object written before a request started is seen by it. Most namespaces have none, and the
answer then costs a poll of the watch (nothing at all when the store did not move) and a dict lookup.

Objects are decoded once per version. Each entry is ``(mod_revision, object)``; callers must not change
the objects (a plugin that writes one copies it first).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from kubeloop.store import Compacted, Store, StoreEvent, StoreWatch

__all__ = ["NamespacedObjects"]

Entry = tuple[int, dict[str, Any]]
_EMPTY: dict[str, Entry] = {}


class NamespacedObjects:
    """The objects under ``prefix`` (``/registry/core/<plural>/``), by namespace then name."""

    def __init__(self, store: Store, prefix: str) -> None:
        self._store = store
        self._prefix = prefix
        self._watch: StoreWatch | None = None
        self._checked = -1  # the store revision up to which every change was applied
        self._by_namespace: dict[str, dict[str, Entry]] = {}
        self._loading: asyncio.Lock | None = None

    def current(self, namespace: str) -> dict[str, Entry] | None:
        """The namespace's objects by name now (empty when it has none), or ``None`` when everything must be
        read first (:meth:`load`)."""
        # PrefixChanges.poll, inlined: this runs on every create of a namespaced object.
        watch = self._watch
        if watch is None:
            return None
        revision = self._store.revision
        if revision != self._checked:
            try:
                events = watch.poll()
            except Compacted:  # fell past the watch buffer: read everything again
                watch.close()
                self._watch = None
                return None
            self._checked = revision
            for event in events:
                self._apply(event)
        return self._by_namespace.get(namespace, _EMPTY)

    async def load(self, namespace: str) -> dict[str, Entry]:
        """Read every object (once, however many callers wait), follow changes from then on, and answer
        :meth:`current` for ``namespace``."""
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            found = self.current(namespace)
            if found is not None:
                return found
            # Watch first, then read: a change committed in between is in both, applied in order.
            if self._watch is not None:
                self._watch.close()
            self._checked = self._store.revision
            self._watch = self._store.watch(self._prefix, after=self._checked)
            listed = await self._store.range(self._prefix)
            self._by_namespace = {}
            for kv in listed.items:
                self._put(kv.key, kv.mod_revision, kv.value)
            found = self.current(namespace)
            assert found is not None
            return found

    def _split(self, key: str) -> tuple[str, str]:
        namespace, _, name = key[len(self._prefix):].partition("/")
        return namespace, name

    def _put(self, key: str, revision: int, value: bytes) -> None:
        namespace, name = self._split(key)
        self._by_namespace.setdefault(namespace, {})[name] = (revision, orjson.loads(value))

    def _apply(self, event: StoreEvent) -> None:
        if event.type == "DELETE":
            namespace, name = self._split(event.kv.key)
            objects = self._by_namespace.get(namespace)
            if objects is not None:
                objects.pop(name, None)
                if not objects:
                    del self._by_namespace[namespace]
        else:
            self._put(event.kv.key, event.kv.mod_revision, event.kv.value)
