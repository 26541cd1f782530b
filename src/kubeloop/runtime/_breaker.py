"""``CircuitBreaker``: stop calling a dependency that keeps failing, and say so.

One breaker guards one named dependency (a cloud API, a database, another service) shared by every
reconcile that needs it. Backoff per key does not protect a dependency that is down for everyone:
each key still probes it on its own schedule. The breaker makes that one decision for all of them.

States (a small state machine; time is the injected :class:`Clock`):

* **closed**: calls go through. ``failure_threshold`` *consecutive* failures open the circuit
  (a success resets the count).
* **open**: no call is made. :meth:`CircuitBreaker.guard` / :meth:`CircuitBreaker.call` raise
  :class:`CircuitOpen`, a :class:`~kubeloop.runtime.TransientError` whose ``retry_after`` is the
  rest of the cool-off, so the controller requeues the key for exactly when a call may be tried
  again, without counting an error or growing the key's backoff. Nothing is dropped: unlike a breaker
  that discards events, every key comes back.
* **half-open**: once ``cool_off`` seconds have passed, one probe call at a time is let through;
  ``success_threshold`` successes close the circuit, a failure opens it again for another cool-off.
  Callers that find the probe slot taken get :class:`CircuitOpen` with ``retry_after = cool_off``.

What counts as a failure is ``is_failure(exc)``; by default every exception except an
``ApiError`` the dependency answered deliberately (4xx other than 429: NotFound, Conflict,
Invalid... say the dependency works). ``asyncio.CancelledError`` is never a failure.

Reporting: the gauge ``kubeloop_circuit_breaker_state{name,state}`` (one-hot over closed, open,
half-open), ``kubeloop_circuit_breaker_transitions_total{name,to}`` and
``kubeloop_circuit_breaker_rejected_total{name}``; and on every change of state, when an
:class:`~kubeloop.runtime.EventRecorder` is given, a core/v1 Event (reason ``CircuitOpen``,
``CircuitHalfOpen`` or ``CircuitClosed``; ``Warning`` when opening) on the designated
``event_object`` if one is set, else on the object passed to the call that caused the change.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from kubeloop.api import ApiError, Clock, SystemClock
from kubeloop.runtime._events import EventRecorder
from kubeloop.runtime._metrics import BreakerMetrics, Metrics
from kubeloop.runtime._reconcile import TransientError

__all__ = ["BreakerState", "CircuitBreaker", "CircuitOpen"]

log = logging.getLogger("kubeloop.runtime.breaker")

T = TypeVar("T")
BreakerState = Literal["closed", "open", "half-open"]
_REASONS: dict[str, str] = {"open": "CircuitOpen", "half-open": "CircuitHalfOpen", "closed": "CircuitClosed"}


class CircuitOpen(TransientError):
    """The dependency's circuit is open: try again after ``retry_after`` seconds, without calling it."""

    def __init__(self, dependency: str, retry_after: float) -> None:
        super().__init__(
            f"circuit for {dependency!r} is open; not calling it for {retry_after:.3g} s",
            retry_after=retry_after,
        )
        self.dependency = dependency


def failure_unless_answered(exc: BaseException) -> bool:
    """The default ``is_failure``: a deliberate 4xx answer (not 429) means the dependency works."""
    if isinstance(exc, ApiError):
        return exc.code >= 500 or exc.code == 429
    return isinstance(exc, Exception)


class CircuitBreaker:
    def __init__(
        self,
        name: str,
        *,
        failure_threshold: int = 5,
        success_threshold: int = 1,
        cool_off: float = 30.0,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        events: EventRecorder | None = None,
        event_object: Mapping[str, Any] | None = None,
        is_failure: Callable[[BaseException], bool] = failure_unless_answered,
    ) -> None:
        if failure_threshold < 1 or success_threshold < 1:
            raise ValueError("failure_threshold and success_threshold must be at least 1")
        if cool_off <= 0:
            raise ValueError("cool_off must be positive")
        self.name = name
        self.failure_threshold = failure_threshold
        self.success_threshold = success_threshold
        self.cool_off = cool_off
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._metrics: BreakerMetrics = (metrics if metrics is not None else Metrics()).breaker(name)
        self.events = events
        self.event_object = event_object
        self.is_failure = is_failure
        self._state: BreakerState = "closed"
        self._failures = 0  # consecutive, while closed
        self._successes = 0  # while half-open
        self._opened_at = 0.0
        self._probing = False
        self.last_error: BaseException | None = None
        self._metrics.state(self._state)

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> BreakerState:
        """The state now; an open circuit whose cool-off has passed reads as half-open."""
        if self._state == "open" and self._remaining() <= 0:
            return "half-open"
        return self._state

    def _remaining(self) -> float:
        return self._opened_at + self.cool_off - self._clock.monotonic()

    # -- use -----------------------------------------------------------------------------------

    @asynccontextmanager
    async def guard(self, on: Mapping[str, Any] | None = None) -> AsyncIterator[None]:
        """``async with breaker.guard(obj):`` wrap the calls to the dependency.

        Raises :class:`CircuitOpen` *before* the body when the circuit is open; an exception from
        the body counts as a failure (per ``is_failure``) and propagates; a normal exit is a success.
        ``on`` is the object being reconciled, for the Event when no ``event_object`` is designated.
        """
        await self.before_call(on)
        try:
            yield
        except BaseException as exc:
            await self.after_call(exc, on)
            raise
        await self.after_call(None, on)

    async def call(self, fn: Callable[[], Awaitable[T]], *, on: Mapping[str, Any] | None = None) -> T:
        """``await breaker.call(lambda: dependency.do(...), on=obj)``: :meth:`guard` around one call."""
        async with self.guard(on):
            return await fn()

    async def before_call(self, on: Mapping[str, Any] | None = None) -> None:
        """Admit a call or raise :class:`CircuitOpen` (the low-level half of :meth:`guard`)."""
        if self._state == "closed":
            return
        if self._state == "open":
            remaining = self._remaining()
            if remaining > 0:
                self._metrics.rejected()
                raise CircuitOpen(self.name, remaining)
            self._probing = True  # taken before the Event is written, so no second caller slips in
            await self._move("half-open", on, "cool-off over; letting one probe call through")
            return
        if self._probing:
            self._metrics.rejected()
            raise CircuitOpen(self.name, self.cool_off)
        self._probing = True

    async def after_call(self, exc: BaseException | None, on: Mapping[str, Any] | None = None) -> None:
        """Record a call's outcome: ``exc`` is what it raised, or ``None`` on success."""
        probing, self._probing = self._probing, False
        if exc is not None and not isinstance(exc, Exception):
            return  # cancelled or exiting: no verdict on the dependency
        if exc is None or not self.is_failure(exc):
            self._failures = 0
            if self._state == "half-open" and probing:
                self._successes += 1
                if self._successes >= self.success_threshold:
                    await self._move("closed", on, "probe call succeeded; calls resume")
            return
        self.last_error = exc
        if self._state == "half-open":
            await self._open(on, f"probe call failed: {exc}")
        elif self._state == "closed":
            self._failures += 1
            if self._failures >= self.failure_threshold:
                await self._open(on, f"{self._failures} consecutive failures, the last: {exc}")

    async def _open(self, on: Mapping[str, Any] | None, why: str) -> None:
        self._opened_at = self._clock.monotonic()
        await self._move("open", on, f"{why}; no calls for {self.cool_off:g} s")

    async def _move(self, to: BreakerState, on: Mapping[str, Any] | None, why: str) -> None:
        self._state = to
        self._failures = 0
        self._successes = 0
        self._metrics.state(to)
        self._metrics.transition(to)
        message = f"circuit for dependency {self.name!r} is {to}: {why}"
        (log.warning if to == "open" else log.info)("%s", message)
        target = self.event_object if self.event_object is not None else on
        if self.events is not None and target is not None:
            await self.events.event(target, "Warning" if to == "open" else "Normal", _REASONS[to], message)
