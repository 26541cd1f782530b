"""Events from the workload controllers, written off the reconcile path as client-go's broadcaster does.

A controller calls :meth:`EventSink.emit` (synchronous, never blocks, never raises) with the object
the Event is about, its type, reason and message, as upstream's ``recorder.Eventf`` (e.g. the
ReplicaSet controller's ``SuccessfulCreate`` "Created pod: web-7c9f-abcde", the Deployment
controller's ``ScalingReplicaSet`` "Scaled up replica set web-7c9f from 0 to 3"). :meth:`run`
writes them through :class:`kubeloop.runtime.EventRecorder` with a few concurrent writers, so a
reconcile never waits for its Events and a slow or failing API costs the controller nothing.

Guarantees, as upstream's broadcaster: Events are written in the order emitted per writer slot;
at most ``max_queued`` wait (1,000 as ``maxQueuedEvents``), further ones are dropped and counted in
:attr:`EventSink.dropped`; a write that fails is logged and dropped by the recorder. Events emitted
while no :meth:`run` is active wait in the queue (bounded) until one starts.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from kubeloop.api import Clock
from kubeloop.client import Client
from kubeloop.runtime import EventRecorder

__all__ = ["MAX_QUEUED_EVENTS", "EventSink", "Severity"]

MAX_QUEUED_EVENTS = 1000
Severity = Literal["Normal", "Warning"]  # an Event's ``type``


class EventSink:
    """Queue Events now, write them in the background (:meth:`run`)."""

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        clock: Clock | None = None,
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = 4,
    ) -> None:
        self.recorder = EventRecorder(client, component=component, clock=clock)
        self.max_queued = max_queued
        self.writers = writers
        self.dropped = 0
        self._queue: deque[tuple[dict[str, Any], Severity, str, str]] = deque()
        self._wakeup = asyncio.Event()

    def emit(self, obj: Mapping[str, Any], event_type: Severity, reason: str, message: str, *,
             api_version: str, kind: str) -> None:  # fmt: skip
        """Queue an Event about ``obj`` (``api_version``/``kind`` name it: cached objects may lack them)."""
        if len(self._queue) >= self.max_queued:
            self.dropped += 1
            return
        involved = {"apiVersion": api_version, "kind": kind, "metadata": obj.get("metadata") or {}}
        self._queue.append((involved, event_type, reason, message))
        self._wakeup.set()

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def run(self) -> None:
        """Write queued Events until cancelled."""
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self.writers, len(self._queue)))]
                await asyncio.gather(*(self.recorder.event(*item) for item in batch))
