"""``retry_on_conflict``: client-go ``util/retry.RetryOnConflict`` with its backoff arithmetic.

``fn`` must re-read the object, re-apply its change and write; it is called at most
``backoff.steps`` times. Only ``Conflict`` (409, reason Conflict) is retried; any other error is
raised at once; when the steps run out the *last Conflict* is raised (not a timeout). Between
calls it sleeps ``duration + U[0, jitter*duration)`` and multiplies ``duration`` by ``factor``,
jitter not compounded (apimachinery ``pkg/util/wait/backoff.go``). Time and randomness are injected.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from kubeloop.api import Clock, Conflict, SystemClock

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRY", "Backoff", "retry_on_conflict"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    steps: int
    duration: float
    factor: float = 1.0
    jitter: float = 0.0

    def delays(self, rng: random.Random) -> list[float]:
        """The ``steps - 1`` sleeps between attempts."""
        out: list[float] = []
        duration = self.duration
        for _ in range(max(0, self.steps - 1)):
            out.append(duration + (rng.random() * self.jitter * duration if self.jitter > 0 else 0.0))
            duration *= self.factor
        return out


# "for a conflict where multiple clients are making changes" (client-go util/retry/util.go).
DEFAULT_RETRY = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
# "an unrelated modification to a resource under active management by one or more controllers".
DEFAULT_BACKOFF = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)


async def retry_on_conflict(
    fn: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff = DEFAULT_RETRY,
    steps: int | None = None,
    clock: Clock | None = None,
    rng: random.Random | None = None,
) -> T:
    """Call ``fn`` until it does not raise ``Conflict``; return its result or raise the last Conflict."""
    if steps is not None:
        backoff = Backoff(steps, backoff.duration, backoff.factor, backoff.jitter)
    if backoff.steps < 1:
        raise ValueError("backoff.steps must be at least 1")
    clock = clock or SystemClock()
    delays = backoff.delays(rng or random.Random())
    for attempt in range(backoff.steps):
        try:
            return await fn()
        except Conflict:
            if attempt == backoff.steps - 1:
                raise
        await clock.sleep(delays[attempt])
    raise AssertionError("unreachable")
