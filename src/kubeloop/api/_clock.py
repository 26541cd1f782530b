"""Time, injected: the one ``Clock`` seam used by queues, backoff, leases, the kubelet and timestamps.

Code that waits or stamps time takes a ``Clock``; production passes :class:`SystemClock`, tests pass
``kubeloop.testing.FakeClock``, so nothing time-based depends on the machine being fast.

``now()`` is wall-clock seconds since the epoch (for timestamps written into objects);
``monotonic()`` is for measuring intervals; ``sleep()`` waits on the clock's own time.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock", "format_micro_time", "format_time", "parse_time"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


_last_formatted: tuple[int, str] = (0, "1970-01-01T00:00:00Z")


def format_time(seconds: float) -> str:
    """``metav1.Time``: RFC 3339, UTC, second precision (``2024-01-01T00:00:00Z``)."""
    global _last_formatted
    whole = int(seconds)
    last = _last_formatted
    if last[0] == whole:  # writes come many per second; strftime is not cheap
        return last[1]
    text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_formatted = (whole, text)
    return text


def format_micro_time(seconds: float) -> str:
    """``metav1.MicroTime``: ``2006-01-02T15:04:05.000000Z`` (Lease and Event times)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float:
    """Seconds since the epoch from an RFC 3339 timestamp (``Z`` or offset, optional fraction)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
