"""Rate limiters: small strategies that decide how long a failing key waits before its next try.

The seam is client-go's ``RateLimiter`` (``util/workqueue/default_rate_limiters.go``): ``when(key)``
records one more failure and returns the delay, ``forget(key)`` clears the key's failure history,
``num_requeues(key)`` reports it. Policies combine rather than grow flags:

- :class:`ItemExponential` (per key): ``base * 2**n`` for the n-th failure, capped at ``max_delay``.
  With the defaults 5 ms / 1000 s: 5 ms, 10 ms, ... 655.36 s on the 18th call, 1000 s from the 19th.
- :class:`TokenBucket` (one bucket for all keys): ``rate`` per second with ``burst``; ``when`` reserves a
  token and returns how long until it is available. Keeps no per-key state.
- :class:`MaxOf`: the largest delay of its members (all are asked, so all advance their state).
- :class:`ItemFastSlow`, :class:`WithMaxWait`: the other client-go shapes.
- :func:`default_controller_rate_limiter`: ``MaxOf(ItemExponential(5 ms, 1000 s), TokenBucket(10/s, 100))``.

A consequence worth knowing (and kept): a key that succeeds (``forget``) and fails again restarts at
the base delay; backoff does not survive alternating success and failure.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from kubeloop.api import Clock, SystemClock

__all__ = [
    "ItemExponential",
    "ItemFastSlow",
    "MaxOf",
    "RateLimiter",
    "TokenBucket",
    "WithMaxWait",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """Record a failure of ``key`` and return how many seconds it should wait."""
        ...

    def forget(self, key: Hashable) -> None:
        """Drop ``key``'s failure history (it succeeded, or we gave up on it)."""
        ...

    def num_requeues(self, key: Hashable) -> int:
        """Failures recorded for ``key`` since it was last forgotten."""
        ...


class ItemExponential:
    """Per-key exponential backoff: ``base * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        exp = self._failures.get(key, 0)
        self._failures[key] = exp + 1
        if exp > 1023:  # 2**exp would overflow a float: upstream returns the cap on overflow too
            return self.max_delay
        return min(self.base * 2.0**exp, self.max_delay)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class ItemFastSlow:
    """``fast`` for the first ``max_fast_attempts`` failures of a key, ``slow`` after that."""

    def __init__(self, fast: float, slow: float, max_fast_attempts: int) -> None:
        self.fast, self.slow, self.max_fast_attempts = fast, slow, max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        n = self._failures.get(key, 0) + 1
        self._failures[key] = n
        return self.fast if n <= self.max_fast_attempts else self.slow

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class TokenBucket:
    """One token bucket shared by every key (golang.org/x/time/rate ``Limiter.Reserve`` semantics).

    The bucket starts full. Each ``when`` takes a token, going into debt when none is left; the delay
    is how long the refill takes to pay the debt back. This bounds the overall retry rate of a
    controller, whatever the number of failing keys.
    """

    def __init__(self, rate: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("TokenBucket needs rate > 0 and burst >= 1")
        self.rate, self.burst = rate, burst
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def when(self, key: Hashable) -> float:
        now = self._clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        self._tokens -= 1.0
        return -self._tokens / self.rate if self._tokens < 0 else 0.0

    def forget(self, key: Hashable) -> None:
        return None

    def num_requeues(self, key: Hashable) -> int:
        return 0


class MaxOf:
    """The most conservative of several limiters: every member is asked, the longest delay wins."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOf needs at least one limiter")
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        return max([limiter.when(key) for limiter in self.limiters])

    def forget(self, key: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return max(limiter.num_requeues(key) for limiter in self.limiters)


class WithMaxWait:
    """Another limiter's delay, never longer than ``max_delay``."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self.limiter, self.max_delay = limiter, max_delay

    def when(self, key: Hashable) -> float:
        return min(self.limiter.when(key), self.max_delay)

    def forget(self, key: Hashable) -> None:
        self.limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return self.limiter.num_requeues(key)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOf:
    """client-go ``DefaultControllerRateLimiter``: per-key 5 ms..1000 s, overall 10 per s, burst 100."""
    return MaxOf(ItemExponential(0.005, 1000.0), TokenBucket(10.0, 100, clock=clock))
