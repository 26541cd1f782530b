"""The reflector: keeps a sink in step with the server by list, then watch (client-go ``Reflector``).

Loop (client-go ``tools/cache/reflector.go`` ``ListAndWatch``):

1. **List** every page (``Client.list_all``) and hand the items and the list's resourceVersion to
   ``sink.replace``; the sink then holds exactly the server's state at that version.
2. **Watch** from that resourceVersion (``allowWatchBookmarks``, a random ``timeoutSeconds`` in
   [300, 600) like client-go), passing each event to ``sink.apply`` and remembering the event's
   resourceVersion (bookmarks only move the version).
3. When the stream **ends** (server timeout, dropped connection, ``ConnectionFailed``), watch again
   from the last version seen: no relist, no lost or repeated events.
4. On **410** (``Gone``/``Expired``, as an ERROR event or an HTTP answer) the version is too old:
   relist at once from step 1.
5. On any other **error** (list or watch; 429, 5xx, 403...), wait with exponential backoff
   (0.8 s doubling to 30 s, with jitter, reset after 2 min without failures: client-go's
   ``backoffManager``) and then relist. A watch that ends at once without a single event counts
   as a failure too, so a server that closes every watch cannot make the reflector spin.

Time and randomness are injected (``clock``, ``rng``). ``run()`` returns only when cancelled; the
open watch stream is closed on cancellation.
"""

from __future__ import annotations

import contextlib
import logging
import random
from typing import Any, Protocol

from kubeloop.api import ApiError, Clock, Gone, ResourceInfo, SystemClock
from kubeloop.client import Client, ConnectionFailed, WatchEvent

__all__ = ["Reflector", "ReflectorSink"]

log = logging.getLogger("kubeloop.runtime.reflector")

MIN_WATCH_TIMEOUT = 300  # client-go minWatchTimeout (5 min); each watch asks for [300, 600) s.
BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
BACKOFF_RESET_AFTER = 120.0


class ReflectorSink(Protocol):
    """Where a reflector delivers state: a full replacement, then one event at a time."""

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None: ...

    def apply(self, event: WatchEvent) -> None: ...


class _Backoff:
    """Exponential backoff with jitter that resets after a quiet period (client-go ``backoffManager``)."""

    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self._clock = clock
        self._rng = rng
        self._next = BACKOFF_INITIAL
        self._last_failure: float | None = None

    def delay(self) -> float:
        now = self._clock.monotonic()
        if self._last_failure is not None and now - self._last_failure >= BACKOFF_RESET_AFTER:
            self._next = BACKOFF_INITIAL
        self._last_failure = now
        base = self._next
        self._next = min(self._next * 2, BACKOFF_MAX)
        return base * (1 + self._rng.random())  # jitter factor 1.0, as client-go's reflector


class Reflector:
    def __init__(
        self,
        client: Client,
        resource: ResourceInfo,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._resource = resource
        self._sink = sink
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._backoff = _Backoff(self._clock, self._rng)
        self.last_sync_resource_version = ""
        self.lists = 0
        self.watches = 0

    @property
    def resource(self) -> ResourceInfo:
        return self._resource

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                await self._list()
                await self._watch_until_expired()
            except ApiError as exc:
                delay = self._backoff.delay()
                log.warning("%s: %r; relisting in %.2fs", self._resource.group_resource, exc, delay)
                await self._clock.sleep(delay)

    async def _list(self) -> None:
        items, rv = await self._client.list_all(
            self._resource, namespace=self._namespace,
            label_selector=self._label_selector, field_selector=self._field_selector,
        )
        self.lists += 1
        self._sink.replace(items, rv)
        self.last_sync_resource_version = rv

    async def _watch_until_expired(self) -> None:
        """Watch from the last version, resuming after every end of stream; return on 410."""
        while True:
            self.watches += 1
            started = self._clock.monotonic()
            received = 0
            stream = self._client.watch(
                self._resource, namespace=self._namespace, resource_version=self.last_sync_resource_version,
                label_selector=self._label_selector, field_selector=self._field_selector,
                timeout_seconds=int(MIN_WATCH_TIMEOUT * (1 + self._rng.random())), allow_bookmarks=True,
            )
            try:
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        received += 1
                        if event.type != "BOOKMARK":
                            self._sink.apply(event)
                        if event.resource_version:
                            self.last_sync_resource_version = event.resource_version
            except Gone as exc:
                log.info("%s: watch expired (%s); relisting", self._resource.group_resource, exc.message)
                return
            except ConnectionFailed as exc:
                # A dropped stream: resume from the last version seen, after a backoff if it was instant.
                if received == 0:
                    await self._clock.sleep(self._backoff.delay())
                log.info("%s: watch stream failed (%s); resuming", self._resource.group_resource, exc.message)
                continue
            if received == 0 and self._clock.monotonic() - started < 1.0:
                raise ApiError(f"very short watch: {self._resource.group_resource}: watch ended with no events")
