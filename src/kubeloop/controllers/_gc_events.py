"""A small event recorder: core/v1 Events about an object, as client-go's ``record.EventRecorder`` writes them.

Contract: :meth:`EventRecorder.warn` creates one ``Event`` (type Warning) in the object's namespace
(``default`` for cluster-scoped objects), named ``<name>.<hex nanoseconds>`` like upstream, with
``involvedObject``, ``reason``, ``message``, ``source.component``, ``count: 1`` and first/last
timestamps from the injected clock. The same ``(object uid, reason, dedup)`` is recorded once per
recorder (upstream's correlator would only bump ``count``). :meth:`warn_soon` is for synchronous
callers (informer handlers): it queues the event for :meth:`run`, which writes queued events until
cancelled; a failure to write an event is logged and never propagates.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

from kubeloop.api import BUILTIN_RESOURCES, ApiError, Clock, format_time
from kubeloop.client import Client
from kubeloop.controllers._gc_graph import ObjectReference

__all__ = ["EventRecorder"]

log = logging.getLogger("kubeloop.controllers.events")

EVENTS = next(r for r in BUILTIN_RESOURCES if r.group == "" and r.plural == "events")


class EventRecorder:
    def __init__(self, client: Client, *, clock: Clock, component: str) -> None:
        self._client = client
        self._clock = clock
        self.component = component
        self._seen: set[tuple[str, str, str]] = set()
        self._pending: list[tuple[ObjectReference, str, str]] = []
        self._wake = asyncio.Event()
        self._seq = itertools.count()

    def _first_time(self, obj: ObjectReference, reason: str, dedup: str) -> bool:
        key = (obj.uid, reason, dedup)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    async def warn(self, obj: ObjectReference, reason: str, message: str, *, dedup: str = "") -> None:
        if self._first_time(obj, reason, dedup):
            await self._write(obj, reason, message)

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
                try:
                    await self._write(obj, reason, message)
                except ApiError as err:
                    log.warning("cannot record event %s on %s: %s", reason, obj, err.message)

    async def _write(self, obj: ObjectReference, reason: str, message: str) -> None:
        now = self._clock.now()
        stamp = format_time(now)
        namespace = obj.namespace or "default"
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{obj.name}.{int(now * 1e9) + next(self._seq):x}", "namespace": namespace},
            "involvedObject": {"kind": obj.kind, "apiVersion": obj.api_version, "name": obj.name,
                               "namespace": obj.namespace, "uid": obj.uid},
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": "",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        if not obj.namespace:
            event["involvedObject"].pop("namespace")
        await self._client.create(EVENTS, event, namespace=namespace)
