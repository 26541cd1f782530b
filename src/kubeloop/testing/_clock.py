"""``FakeClock``: time that moves only when a test says so.

``sleep()`` parks the caller until ``advance()`` moves time past its deadline; waiters wake in
deadline order. ``now()`` starts at a fixed epoch so timestamps in tests are reproducible.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

__all__ = ["FakeClock"]


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now - self._start

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking each sleeper whose deadline passes, in order, letting it run."""
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not fut.done():
                fut.set_result(None)
            for _ in range(5):
                await asyncio.sleep(0)
        self._now = target
        for _ in range(5):
            await asyncio.sleep(0)
