"""The GC's Warning Events: once per (object, reason, cause), written through the controllers' EventSink.

Contract: :meth:`GcEvents.warn` queues one Warning ``Event`` about an object on an
:class:`._events.EventSink` (synchronous, never blocks: callers include informer handlers), which
:meth:`GcEvents.run` writes in the background: in the object's namespace, ``default`` for
cluster-scoped objects, with ``involvedObject``, ``reason``, ``message``, ``source.component`` and
timestamps from the injected clock; best effort, never raises. The same ``(object uid, reason,
dedup)`` is queued once per collector: the GC meets an invalid reference again on every pass, and
counting each meeting (upstream's correlator bumps ``count``) would make a quiet collector write
forever, so the first is what ``kubectl describe`` shows.
"""

from __future__ import annotations

from kubeloop.api import Clock
from kubeloop.client import Client
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._gc_graph import ObjectReference

__all__ = ["GcEvents"]


class GcEvents:
    def __init__(self, client: Client, *, clock: Clock, component: str) -> None:
        self.sink = EventSink(client, component=component, clock=clock)
        self._seen: set[tuple[str, str, str]] = set()

    def warn(self, obj: ObjectReference, reason: str, message: str, *, dedup: str = "") -> None:
        key = (obj.uid, reason, dedup)
        if key in self._seen:
            return
        self._seen.add(key)
        meta = {"name": obj.name, "uid": obj.uid, **({"namespace": obj.namespace} if obj.namespace else {})}
        self.sink.emit({"metadata": meta}, "Warning", reason, message, api_version=obj.api_version, kind=obj.kind)

    async def run(self) -> None:
        await self.sink.run()
