"""Delaying and rate-limiting layers over :class:`WorkQueue` (client-go ``delaying_queue.go``,
``rate_limiting_queue.go``).

:class:`DelayingQueue` adds ``add_after(key, delay)``:

- ``delay <= 0`` adds at once; otherwise the key waits on the queue's :class:`Clock` and is added when
  its time comes, with all of :class:`WorkQueue`'s guarantees from then on.
- A key already waiting keeps the **earlier** of its two ready times: a later ``add_after`` never
  postpones work that was promised sooner.
- Every ``add_after`` call (even with ``delay <= 0``) counts in ``workqueue_retries_total``, as upstream.
- After shutdown, ``add_after`` is ignored and keys still waiting are dropped.
- ``next_ready_at`` is the earliest ready time of a waiting key (what :meth:`Manager.idle` reads).

One timer task sleeps until the earliest ready time; it is replaced when an earlier key arrives and
cancelled by ``shutdown``, so the queue leaves no task behind.

:class:`RateLimitingQueue` adds ``add_rate_limited(key)`` = ``add_after(key, limiter.when(key))``,
``forget(key)`` (resets the key's backoff only; it does not touch the queue) and ``num_requeues(key)``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Hashable
from typing import TypeVar

from kubeloop.api import Clock
from kubeloop.runtime._metrics import Metrics, QueueMetrics
from kubeloop.runtime._queue import WorkQueue
from kubeloop.runtime._ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["DelayingQueue", "RateLimitingQueue"]

K = TypeVar("K", bound=Hashable)
_SLACK = 1e-6


class DelayingQueue(WorkQueue[K]):
    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: Metrics | QueueMetrics | None = None,
        max_depth: int | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics, max_depth=max_depth)
        self._heap: list[tuple[float, int, K]] = []
        self._ready_at: dict[K, float] = {}
        self._seq = itertools.count()
        self._timer: asyncio.Task[None] | None = None
        self._timer_at: float | None = None

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds (at once if ``delay <= 0``), never later than promised."""
        if self.shutting_down:
            return
        self._metrics.retried()
        if delay <= 0:
            self.add(key)
            return
        ready_at = self._clock.monotonic() + delay
        current = self._ready_at.get(key)
        if current is not None and current <= ready_at:
            return
        self._ready_at[key] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), key))
        self._arm()

    @property
    def waiting(self) -> int:
        """Keys waiting for their ready time."""
        return len(self._ready_at)

    @property
    def next_ready_at(self) -> float | None:
        """The earliest ready time (the clock's ``monotonic()``) of a waiting key; ``None``: none waits."""
        return min(self._ready_at.values(), default=None)

    def shutdown(self) -> None:
        super().shutdown()
        self._heap.clear()
        self._ready_at.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = None

    async def shutdown_with_drain(self) -> None:
        timer = self._timer
        self.shutdown()
        if timer is not None:
            await asyncio.gather(timer, return_exceptions=True)
        await super().shutdown_with_drain()

    # -- internals ---------------------------------------------------------------------------

    def _move_due(self) -> None:
        # A microsecond of slack: clocks built on epoch floats lose sub-microsecond precision, and a
        # key must not miss the wake-up that was scheduled for it.
        now = self._clock.monotonic() + _SLACK
        while self._heap and self._heap[0][0] <= now:
            ready_at, _, key = heapq.heappop(self._heap)
            if self._ready_at.get(key) != ready_at:
                continue  # superseded by an earlier add_after
            del self._ready_at[key]
            self.add(key)

    def _arm(self) -> None:
        """Make sure a timer sleeps until the earliest ready time (replacing a later one)."""
        while self._heap and self._ready_at.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # drop superseded entries so the head is real
        if not self._heap:
            return
        earliest = self._heap[0][0]
        if self._timer is not None and not self._timer.done():
            if self._timer_at is not None and self._timer_at <= earliest:
                return
            self._timer.cancel()
        self._timer_at = earliest
        self._timer = asyncio.get_running_loop().create_task(
            self._sleep_until(earliest), name=f"kubeloop-queue-timer:{self.name}"
        )

    async def _sleep_until(self, ready_at: float) -> None:
        delay = ready_at - self._clock.monotonic()
        if delay > _SLACK:
            await self._clock.sleep(delay)
        if self._timer is asyncio.current_task():
            self._timer = None
            self._timer_at = None
        self._move_due()
        self._arm()


class RateLimitingQueue(DelayingQueue[K]):
    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: Metrics | QueueMetrics | None = None,
        max_depth: int | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics, max_depth=max_depth)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock=self._clock)
        )

    def add_rate_limited(self, key: K) -> None:
        """Add ``key`` once the rate limiter allows (one more recorded failure for it)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff. The queue itself is untouched."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)
