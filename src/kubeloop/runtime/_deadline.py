"""``within(clock, seconds, awaitable)``: a timeout measured on an injected :class:`Clock`.

``asyncio.timeout`` measures the event loop's own time, which a fake clock does not move; this
races the awaitable against ``clock.sleep`` instead. The loser is cancelled and awaited before
``within`` returns or raises, so no task is left behind (also when the caller itself is cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from kubeloop.api import Clock

__all__ = ["within"]

T = TypeVar("T")


async def within(clock: Clock, seconds: float, awaitable: Awaitable[T]) -> T:
    """The awaitable's result, or ``TimeoutError`` once ``seconds`` have passed on ``clock``."""
    work: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    timer = asyncio.ensure_future(clock.sleep(seconds))
    racing: set[asyncio.Future[Any]] = {work, timer}
    try:
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, timer):
            if not task.done():
                task.cancel()
        await asyncio.gather(work, timer, return_exceptions=True)
    if work.cancelled():
        raise TimeoutError(f"not done within {seconds} s")
    return work.result()
