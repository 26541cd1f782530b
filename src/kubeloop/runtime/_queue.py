"""The work queue: client-go's anti-race guarantees, on asyncio.

Producers (event handlers) ``add`` keys; workers ``await get()``, process the key, then call ``done``.

Guarantees (client-go ``util/workqueue/queue.go``):

- **Duplicates collapse.** A key added while it is already waiting is not queued twice.
- **One worker per key.** A key handed to a worker is never handed to another until ``done``.
- **Nothing is lost while processing.** A key added while it is being processed is held back and
  queued again when ``done`` is called: any number of such adds collapse into exactly one more run.
- **FIFO** among waiting keys, unless :attr:`WorkQueue.order` is set: then ``get`` hands out the
  waiting key with the lowest ``order(key)`` (read when the key is queued), FIFO among equals (the
  scheduler's activeQ, a heap by pod priority then arrival). Set it before the first ``add``.
- **Shutdown.** ``shutdown()`` stops accepting adds; keys still waiting are still handed out, and
  ``get`` raises :class:`QueueShutDown` only once the queue is empty and shut down.
  ``shutdown_with_drain()`` also waits until every key in flight is ``done``.
- **Bounded depth, loudly.** With ``max_depth``, an add that leaves more keys pending than the bound
  is still accepted (dropping a key would lose a level-triggered event) but logs one warning per
  crossing and counts ``workqueue_depth_limit_exceeded_total``.

Single event loop: the queue is not thread-safe and needs no locks.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from kubeloop.api import Clock, SystemClock
from kubeloop.runtime._metrics import Metrics, QueueMetrics

__all__ = ["QueueShutDown", "WorkQueue"]

K = TypeVar("K", bound=Hashable)
log = logging.getLogger("kubeloop.runtime.queue")


class QueueShutDown(Exception):
    """``get()`` on a queue that is shut down and has nothing left to hand out."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: Metrics | QueueMetrics | None = None,
        max_depth: int | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else SystemClock()
        if isinstance(metrics, QueueMetrics):
            self._metrics = metrics
        else:
            self._metrics = (metrics if metrics is not None else Metrics()).queue(name)
        self._metrics.track_in_flight(self._unfinished_seconds, self._longest_running_seconds)
        self.max_depth = max_depth
        self.order: Callable[[K], Any] | None = None  # lowest first; None: FIFO
        self._queue: deque[K] = deque()
        self._ordered: list[tuple[Any, int, K]] = []  # with an order: (order, arrival, key)
        self._arrival = itertools.count()
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}  # key -> monotonic time it was handed out
        self._added_at: dict[K, float] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._over_bound = False
        self._drained: asyncio.Event | None = None

    # -- producers ---------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Mark ``key`` as needing processing (a no-op if it already does, or after shutdown)."""
        if self._shutting_down or key in self._dirty:
            return
        self._metrics.added()
        self._added_at.setdefault(key, self._clock.monotonic())
        self._dirty.add(key)
        self._check_depth()
        if key in self._processing:
            return  # deferred: done() queues it again
        self._push(key)
        self._wake_one()

    # -- workers -----------------------------------------------------------------------------

    async def get(self) -> K:
        """The next key to process; the caller owns it until :meth:`done`."""
        while not self._ready():
            if self._shutting_down:
                raise QueueShutDown(self.name)
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif self._ready():
                    self._wake_one()  # we were woken for an item we will not take: pass it on
                raise
        key = self._pop()
        now = self._clock.monotonic()
        self._metrics.got(now - self._added_at.pop(key, now))
        self._processing[key] = now
        self._dirty.discard(key)
        return key

    def done(self, key: K) -> None:
        """Processing of ``key`` finished; if it was added meanwhile, it is queued again now."""
        started = self._processing.pop(key, None)
        if started is not None:
            self._metrics.done(self._clock.monotonic() - started)
        if key in self._dirty:
            self._push(key)
            self._wake_one()
        if self._drained is not None and not self._processing:
            self._drained.set()

    # -- lifecycle ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop accepting adds; waiting workers get the remaining keys, then :class:`QueueShutDown`."""
        self._shutting_down = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shutdown_with_drain(self) -> None:
        """Shut down and wait until every key handed to a worker has been marked done."""
        self.shutdown()
        if self._processing:
            self._drained = asyncio.Event()
            await self._drained.wait()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        """Keys ready to be handed out (excludes keys deferred behind their own processing)."""
        return self._ready()

    @property
    def depth(self) -> int:
        """Keys that need processing, including ones deferred until their current run is done."""
        return len(self._dirty)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    @property
    def in_flight(self) -> int:
        """Keys handed to a worker and not yet ``done``."""
        return len(self._processing)

    def is_idle(self) -> bool:
        """Nothing needs processing and nothing is being processed."""
        return not self._dirty and not self._processing

    # -- internals ---------------------------------------------------------------------------

    def _push(self, key: K) -> None:
        if self.order is None:
            self._queue.append(key)
        else:
            heapq.heappush(self._ordered, (self.order(key), next(self._arrival), key))

    def _pop(self) -> K:
        return heapq.heappop(self._ordered)[2] if self._ordered else self._queue.popleft()

    def _ready(self) -> int:
        return len(self._queue) + len(self._ordered)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _check_depth(self) -> None:
        if self.max_depth is None:
            return
        depth = len(self._dirty)
        if depth > self.max_depth:
            self._metrics.depth_exceeded()
            if not self._over_bound:
                self._over_bound = True
                log.warning(
                    "workqueue %r holds %d keys, above its bound of %d: workers are not keeping up",
                    self.name, depth, self.max_depth,
                )  # fmt: skip
        elif self._over_bound and depth <= self.max_depth // 2:
            self._over_bound = False  # re-arm the warning once the backlog has clearly cleared

    def _unfinished_seconds(self) -> float:
        now = self._clock.monotonic()
        return sum(now - t for t in self._processing.values())

    def _longest_running_seconds(self) -> float:
        if not self._processing:
            return 0.0
        return self._clock.monotonic() - min(self._processing.values())
