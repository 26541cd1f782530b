"""Events from the built-in controllers: written off the reconcile path, repeats aggregated as upstream.

Every built-in controller that records Events (workload controllers, garbage collector, simulated
scheduler and kubelet) does it through one :class:`EventSink`, the counterpart of client-go's
broadcaster with its ``EventCorrelator``:

- :meth:`EventSink.emit` is synchronous, never blocks and never raises: a reconcile never waits for
  its Events, and a slow or failing API costs the controller nothing. At most ``max_queued`` Events
  wait (1,000, upstream's ``maxQueuedEvents``); further ones are dropped and counted in
  :attr:`EventSink.dropped`. Events emitted while no :meth:`EventSink.run` is active wait (bounded).
- :meth:`EventSink.run` writes them, a few concurrently, in the order emitted within each batch.
  The first occurrence is created as :class:`kubeloop.runtime.EventRecorder` creates Events (in
  the object's namespace, ``default`` for cluster-scoped objects; ``involvedObject``,
  ``source.component``, timestamps from the injected clock), named ``<object>.<hex nanoseconds>``
  with a process-wide sequence added so names stay unique across sinks under a fake clock.
- **Aggregation** (client-go ``EventLogger.eventObserve``): an Event identical to one this sink
  wrote before (same component, involved object kind/namespace/name/uid/apiVersion, type, reason
  and message) is not created again: the existing Event is patched with ``count`` + 1 and a new
  ``lastTimestamp``, so ``kubectl describe`` shows ``(x3 over 2m)``. The memory of written Events
  is an LRU of 4,096 keys (``maxLruCacheEntries``); an Event deleted meanwhile (404 on the patch) is
  created afresh, as upstream does. Repeats queued together are folded into one write.
- A write that fails is logged and dropped (best effort, as upstream).

Not modelled: upstream's ``EventAggregator`` (10 similar Events with different messages within 10
minutes collapse into one "(combined from similar events)") and the per-object spam filter.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubeloop.api import ApiError, Clock, NotFound, SystemClock, format_time
from kubeloop.client import Client
from kubeloop.runtime import EVENTS, event_body

__all__ = ["LRU_ENTRIES", "MAX_QUEUED_EVENTS", "EventSink", "Severity"]

log = logging.getLogger("kubeloop.controllers.events")

MAX_QUEUED_EVENTS = 1000
LRU_ENTRIES = 4096
Severity = Literal["Normal", "Warning"]  # an Event's ``type``

_Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Pending:
    key: _Key
    involved: dict[str, Any]
    event_type: Severity
    reason: str
    message: str
    extra: Mapping[str, Any]  # fields beyond event_body's: ``action``, ``related``


@dataclass(slots=True)
class _Written:
    namespace: str
    name: str
    count: int


class EventSink:
    """Queue Events now (:meth:`emit`), write and aggregate them in the background (:meth:`run`)."""

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        clock: Clock | None = None,
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = 4,
        lru_entries: int = LRU_ENTRIES,
    ) -> None:
        self.client = client
        self.component = component
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.max_queued = max_queued
        self.writers = writers
        self.lru_entries = lru_entries
        self.dropped = 0
        # (type, reason, message) of every occurrence written, created or counted; for logs and tests.
        self.recorded: deque[tuple[str, str, str]] = deque(maxlen=100)
        self._queue: deque[_Pending] = deque()
        self._written: OrderedDict[_Key, _Written] = OrderedDict()
        self._wakeup = asyncio.Event()

    def emit(self, obj: Mapping[str, Any], event_type: Severity, reason: str, message: str, *,
             api_version: str, kind: str, action: str = "", related: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        """Queue an Event about ``obj`` (``api_version``/``kind`` name it: cached objects may lack them);
        ``action`` and ``related`` (an object reference) as the events/v1 recorder sets them."""
        if len(self._queue) >= self.max_queued:
            self.dropped += 1
            return
        meta = obj.get("metadata") or {}
        involved = {"apiVersion": api_version, "kind": kind, "metadata": meta}
        key = (self.component, api_version, kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""),
               str(meta.get("uid") or ""), event_type, reason, message)  # fmt: skip
        extra: dict[str, Any] = {"action": action} if action else {}
        if related is not None:
            extra["related"] = dict(related)
        self._queue.append(_Pending(key, involved, event_type, reason, message, extra))
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
                # One batch: up to ``writers`` distinct Events; a repeat within it adds to the count.
                batch: dict[_Key, _Pending] = {}
                times: Counter[_Key] = Counter()
                while self._queue and (len(batch) < self.writers or self._queue[0].key in batch):
                    item = self._queue.popleft()
                    batch.setdefault(item.key, item)
                    times[item.key] += 1
                await asyncio.gather(*(self._write(item, times[key]) for key, item in batch.items()))

    async def _write(self, item: _Pending, times: int) -> None:
        written = self._written.get(item.key)
        if written is not None:
            self._written.move_to_end(item.key)
            if await self._count(written, written.count + times, item):
                return
            del self._written[item.key]  # gone from the API: create it afresh
        event = await self._create(item, times)
        if event is None:
            return
        self.recorded.append((item.event_type, item.reason, item.message))
        meta = event.get("metadata") or {}
        self._written[item.key] = _Written(str(meta.get("namespace") or ""), str(meta.get("name") or ""), times)
        while len(self._written) > self.lru_entries:
            self._written.popitem(last=False)

    async def _create(self, item: _Pending, count: int) -> dict[str, Any] | None:
        """Create the Event as :class:`~kubeloop.runtime.EventRecorder` would, with ``count`` occurrences.

        Named ``<object>.<hex nanoseconds>`` as upstream, plus a process-wide sequence: several
        sinks (the scheduler's, the kubelet's) record about one pod at one instant of a fake clock.
        """
        body = event_body(item.involved, item.event_type, item.reason, item.message, component=self.component,
                          instance="", now=self.clock.now(), count=count)
        if body is None:
            log.warning("event %s/%s not recorded: the object has no name", item.reason, item.message)
            return None
        body.update(item.extra)
        namespace, name = body["metadata"]["namespace"], body["involvedObject"]["name"]
        try:
            return await self.client.create(EVENTS, body, namespace=namespace)
        except ApiError as err:
            log.warning("event %s on %s/%s not recorded: %s", item.reason, namespace, name, err)
            return None

    async def _count(self, written: _Written, count: int, item: _Pending) -> bool:
        """Patch ``count`` and ``lastTimestamp`` of a written Event; False when it no longer exists."""
        patch = {"count": count, "lastTimestamp": format_time(self.clock.now())}
        try:
            await self.client.patch(EVENTS, written.name, patch, namespace=written.namespace, patch_type="strategic")
        except NotFound:
            return False
        except ApiError as err:
            log.warning("event %s on %s/%s not counted: %s", item.reason, written.namespace, written.name, err)
            return True
        written.count = count
        self.recorded.append((item.event_type, item.reason, item.message))
        return True
