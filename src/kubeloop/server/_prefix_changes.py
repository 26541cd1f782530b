"""The changes under one store prefix, current at the store's revision, read without waiting.

The server's caches of small object sets (RBAC's snapshot, the Priority plugin's PriorityClasses)
follow their prefix the same way: a store watch opened just before the objects are read, polled only
when the store's revision moved since the last look. A poll never blocks and is never behind the
revision (the ``Store`` contract), so a cache that applies what :meth:`PrefixChanges.poll` returns is
as current as the store: a request sees every write committed before it. Writes to other prefixes
cost a poll of an empty queue; no write costs nothing at all.
"""

from __future__ import annotations

from kubeloop.store import Compacted, Store, StoreEvent, StoreWatch

__all__ = ["PrefixChanges"]


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
