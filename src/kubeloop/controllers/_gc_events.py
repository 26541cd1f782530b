"""The GC's Warning Events: once per (object, reason, cause), written by the runtime's recorder.

Contract: :meth:`GcEvents.warn` records one Warning ``Event`` about an object through
:class:`kubeloop.runtime.EventRecorder` (client-go's recorder: the Event lands in the object's
namespace, ``default`` for cluster-scoped objects, with ``involvedObject``, ``reason``, ``message``,
``source.component`` and timestamps from the injected clock; writing is best effort and never
raises). The same ``(object uid, reason, dedup)`` is recorded once per collector: the GC finds an
invalid reference again on every pass, and upstream's correlator would only bump ``count`` of the
same Event, so one Event per cause is what ``kubectl describe`` shows either way (the runtime's
recorder does not aggregate counts). :meth:`warn_soon` is for synchronous callers (informer
handlers): it queues the event for :meth:`run`, which writes queued events until cancelled.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubeloop.api import Clock
from kubeloop.client import Client
from kubeloop.controllers._gc_graph import ObjectReference
from kubeloop.runtime import EventRecorder

__all__ = ["GcEvents"]


def _involved(obj: ObjectReference) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": obj.name, "uid": obj.uid}
    if obj.namespace:
        meta["namespace"] = obj.namespace
    return {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta}


class GcEvents:
    def __init__(self, client: Client, *, clock: Clock, component: str) -> None:
        self.recorder = EventRecorder(client, component=component, clock=clock)
        self._seen: set[tuple[str, str, str]] = set()
        self._pending: list[tuple[ObjectReference, str, str]] = []
        self._wake = asyncio.Event()

    def _first_time(self, obj: ObjectReference, reason: str, dedup: str) -> bool:
        key = (obj.uid, reason, dedup)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    async def warn(self, obj: ObjectReference, reason: str, message: str, *, dedup: str = "") -> None:
        if self._first_time(obj, reason, dedup):
            await self.recorder.event(_involved(obj), "Warning", reason, message)

    def warn_soon(self, obj: ObjectReference, reason: str, message: str, *, dedup: str = "") -> None:
        if self._first_time(obj, reason, dedup):
            self._pending.append((obj, reason, message))
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            pending, self._pending = self._pending, []
            for obj, reason, message in pending:
                await self.recorder.event(_involved(obj), "Warning", reason, message)
