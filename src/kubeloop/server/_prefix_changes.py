"""The changes under one store prefix, and the objects they keep, current at the store's revision.

The server's caches of small object sets (RBAC's snapshot, the Priority plugin's PriorityClasses, the
admission webhooks' and admission policies' configurations) and the admission chain's gate on those
configurations follow their prefix the same way: a store watch opened just before the objects are read,
polled only when the store's revision moved since the last look. A poll never blocks and is never behind
the revision (the ``Store`` contract), so a cache that applies what :meth:`PrefixChanges.poll` returns is
as current as the store: a request sees every write committed before it. Writes to other prefixes cost a
poll of an empty queue; no write costs nothing at all.

:class:`PrefixChanges` hands out the events; :class:`PrefixObjects` is the cache most callers want on
top of it: the objects by the rest of their key, each decoded once per stored version, read once
(however many requests wait for them) and followed from then on, with a :attr:`PrefixObjects.generation`
that moves with every change applied, for views derived from the objects (an ordered list, an index).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from kubeloop.store import Compacted, KeyValue, Store, StoreEvent, StoreWatch

__all__ = ["PrefixChanges", "PrefixObjects"]

T = TypeVar("T")


class PrefixChanges:
    """The events under ``prefix`` since the previous :meth:`poll` (or :meth:`start`)."""

    def __init__(self, store: Store, prefix: str) -> None:
        self._store = store
        self._prefix = prefix
        self._watch: StoreWatch | None = None
        self._checked = -1  # the store revision up to which every change was returned

    def start(self) -> None:
        """Follow changes from the store's revision now (call it just before reading the objects)."""
        if self._watch is not None:
            self._watch.close()
        self._checked = self._store.revision
        self._watch = self._store.watch(self._prefix, after=self._checked)

    def poll(self) -> list[StoreEvent] | None:
        """The changes since the last call, in order (``[]`` when the revision did not move), or ``None``
        when the objects must be read again: never started, or the watch fell past its buffer."""
        watch = self._watch
        if watch is None:
            return None
        revision = self._store.revision
        if revision == self._checked:
            return []
        try:
            events = watch.poll()
        except Compacted:
            watch.close()
            self._watch = None
            return None
        self._checked = revision
        return events


class PrefixObjects(Generic[T]):
    """The objects under ``prefix`` by the rest of their key, as ``decode(name, kv)`` made them.

    :meth:`current` is synchronous and answers ``None`` until :meth:`load` read the objects (and again
    whenever the watch fell past its buffer); callers then await :meth:`load`. ``decode`` must not raise
    (a stored object it cannot read is its own "empty" value)."""

    def __init__(self, store: Store, prefix: str, decode: Callable[[str, KeyValue], T]) -> None:
        self._store = store
        self._prefix = prefix
        self._decode = decode
        self._changes = PrefixChanges(store, prefix)
        self._by_name: dict[str, T] = {}
        self._loading: asyncio.Lock | None = None
        self.generation = 0  # moves whenever the objects change (a load, an applied event)

    def current(self) -> dict[str, T] | None:
        """The objects now, or ``None`` when they must be read first (:meth:`load`)."""
        events = self._changes.poll()
        if events is None:
            return None
        if events:
            start = len(self._prefix)
            by_name = self._by_name
            for event in events:
                name = event.kv.key[start:]
                if event.type == "DELETE":
                    by_name.pop(name, None)
                else:
                    by_name[name] = self._decode(name, event.kv)
            self.generation += 1
        return self._by_name

    async def load(self) -> dict[str, T]:
        """Read every object (once, however many callers wait) and follow their changes from then on."""
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            objects = self.current()
            if objects is not None:
                return objects
            # Watch first, then read: a change committed in between is in both and applied twice, in
            # order, ending where the store is.
            self._changes.start()
            listed = await self._store.range(self._prefix)
            start = len(self._prefix)
            self._by_name = {kv.key[start:]: self._decode(kv.key[start:], kv) for kv in listed.items}
            self.generation += 1
            objects = self.current()
            assert objects is not None
            return objects
