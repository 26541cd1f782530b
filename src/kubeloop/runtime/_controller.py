"""The controller: event sources feed a rate-limited queue, workers reconcile keys from it.

Pipeline (controller-runtime ``pkg/internal/controller``): source (informer) -> predicates -> handler ->
:class:`RateLimitingQueue` of :class:`Request` -> ``max_concurrent_reconciles`` workers -> reconciler.

Guarantees:

- A request is never reconciled by two workers at once (the queue's guarantee), and events that
  arrive during a reconcile collapse into exactly one more reconcile after it.
- Outcomes are handled exactly as the table in :mod:`kubeloop.runtime._reconcile` says: success and
  ``requeue_after`` reset the key's backoff; an exception is a rate-limited retry; a
  :class:`PermanentError` is recorded in :attr:`Controller.permanent_failures` and not retried until
  a new event; a :class:`TransientError` with ``retry_after`` retries after exactly that long;
  :class:`~kubeloop.runtime.CircuitOpen` (a dependency's breaker is open) requeues after the cool-off
  and counts as ``requeue_after``, not as an error: nothing failed, nothing was called.
- An exception from a reconciler, predicate or handler never kills a worker or an event source.
- A failed reconcile is logged at error level, as upstream logs it (controller-runtime's
  ``log.Error(err, "Reconciler error")``; kube-controller-manager's workers hand the error to
  ``utilruntime.HandleError``, a klog error line): an :class:`~kubeloop.api.ApiError` (the server's
  answer, such as the routine 409 Conflict) as one line with its code, reason and message and no
  traceback, so a routine conflict costs one line per failed attempt; any other exception (a bug in
  the reconciler) with its traceback. Either way the key is retried with the same rate-limited backoff.
- With ``max_retries`` set (kube-controller-manager's Deployment controller, ``maxRetries = 15`` in
  ``pkg/controller/deployment/deployment_controller.go`` ``handleErr``), a key that has been requeued fewer
  than ``max_retries`` times since it last succeeded logs its failure at debug level (upstream's
  ``V(2)``; an exception that is not the server's answer, a bug, keeps its error line and traceback)
  and is retried; at the limit the failure is logged at error level and the key is dropped
  (``Forget``) until its next event. Without it (controller-runtime's and the other workload
  controllers' behaviour) every key is retried for ever.
- Workers start only after every source has synced (``cache_sync_timeout``, default 2 min as upstream),
  so a reconciler never acts on a half-filled cache.
- :meth:`Controller.stop` lets each worker finish its current reconcile and take no more.
- :meth:`Controller.idle` reports quiescence: synced, nothing queued or in reconcile, no delayed
  requeue due by a given time.

Metrics: ``controller_runtime_reconcile_total{result}``, ``..._reconcile_errors_total``,
``..._terminal_reconcile_errors_total``, ``..._reconcile_time_seconds``, ``..._active_workers``,
``..._max_concurrent_reconciles`` and the queue's ``workqueue_*`` series.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubeloop.api import ApiError, Clock, SystemClock
from kubeloop.runtime._breaker import CircuitOpen
from kubeloop.runtime._deadline import within
from kubeloop.runtime._delaying import RateLimitingQueue
from kubeloop.runtime._handlers import Event, EventType, Handler
from kubeloop.runtime._metrics import Metrics
from kubeloop.runtime._predicates import PredicateFn
from kubeloop.runtime._queue import QueueShutDown
from kubeloop.runtime._ratelimit import RateLimiter
from kubeloop.runtime._reconcile import (
    PermanentError,
    ReconcileFunc,
    Reconciler,
    Request,
    Result,
    TransientError,
)

__all__ = ["CacheSyncTimeout", "Controller", "EventSource", "Watch"]

log = logging.getLogger("kubeloop.runtime.controller")


def _status_line(err: ApiError) -> str:
    """``<code> <reason>: <message>`` of an API error (no reason for upstream's StatusReasonUnknown)."""
    return f"{err.status_code} {err.reason}: {err.message}" if err.reason else f"{err.status_code}: {err.message}"


class EventSource(Protocol):
    """What a controller watches: an informer (``SharedInformer`` satisfies it)."""

    def add_handler(
        self,
        on_add: Callable[[Any], None],
        on_update: Callable[[Any, Any], None],
        on_delete: Callable[[Any], None],
    ) -> Any: ...

    def has_synced(self) -> bool: ...

    async def wait_for_sync(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Watch:
    """One source of events for a controller, with the handler and predicates applied to them."""

    source: EventSource
    handler: Handler
    predicates: tuple[PredicateFn, ...] = ()


class CacheSyncTimeout(Exception):
    """A controller's sources did not sync within ``cache_sync_timeout``."""


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: Reconciler | ReconcileFunc,
        *,
        watches: Sequence[Watch] = (),
        max_concurrent_reconciles: int = 1,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        rate_limiter: RateLimiter | None = None,
        max_queue_depth: int | None = None,
        cache_sync_timeout: float = 120.0,
        max_retries: int | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        if max_retries is not None and max_retries < 0:
            raise ValueError("max_retries must not be negative")
        self.name = name
        self.max_retries = max_retries
        self._reconcile: ReconcileFunc = (
            reconciler.reconcile if isinstance(reconciler, Reconciler) else reconciler
        )
        self.watches: list[Watch] = list(watches)
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.cache_sync_timeout = cache_sync_timeout
        self._clock: Clock = clock if clock is not None else SystemClock()
        self.metrics = metrics if metrics is not None else Metrics()
        self._metrics = self.metrics.controller(name)
        self._metrics.set_max_concurrent(max_concurrent_reconciles)
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(
            name=name,
            clock=self._clock,
            metrics=self.metrics.queue(name, controller=name),
            max_depth=max_queue_depth,
            rate_limiter=rate_limiter,
        )
        self.permanent_failures: dict[Request, PermanentError] = {}
        self._started = False
        self._stopping = False
        self.synced = asyncio.Event()

    # -- wiring --------------------------------------------------------------------------------

    def watch(self, source: EventSource, handler: Handler, *predicates: PredicateFn) -> None:
        if self._started:
            raise RuntimeError(f"controller {self.name!r}: watches must be added before it starts")
        self.watches.append(Watch(source, handler, tuple(predicates)))

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    def idle(self, *, until: float | None = None) -> bool:
        """Quiescent until ``until`` (the clock's ``monotonic()``; default now): its sources have
        synced and its workers run, no request is queued or being reconciled, and no delayed requeue
        is due at or before ``until``."""
        if not self.synced.is_set() or self._stopping or not self.queue.is_idle():
            return False
        due = self.queue.next_ready_at
        return due is None or due > (self._clock.monotonic() if until is None else until)

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Register with every source, wait for them to sync, then reconcile until stopped or cancelled."""
        if self._started:
            raise RuntimeError(f"controller {self.name!r} was already started")
        self._started = True
        try:
            for w in self.watches:
                self._register(w)
            await self._wait_for_sync()
            self.synced.set()
            log.info(
                "controller %r: caches synced, starting %d worker(s)",
                self.name,
                self.max_concurrent_reconciles,
            )
            async with asyncio.TaskGroup() as tg:
                for i in range(self.max_concurrent_reconciles):
                    tg.create_task(self._worker(), name=f"kubeloop-worker:{self.name}:{i}")
        finally:
            self._stopping = True
            self.queue.shutdown()

    def stop(self) -> None:
        """Workers finish the reconcile in hand and take no more; :meth:`run` then returns."""
        self._stopping = True
        self.queue.shutdown()

    async def process_next(self) -> bool:
        """Take one key and reconcile it; ``False`` once the queue is shut down and empty."""
        try:
            request = await self.queue.get()
        except QueueShutDown:
            return False
        try:
            if self._stopping:
                return False
            await self._reconcile_handler(request)
            return True
        finally:
            self.queue.done(request)

    # -- internals -----------------------------------------------------------------------------

    async def _worker(self) -> None:
        while not self._stopping and await self.process_next():
            pass

    async def _reconcile_handler(self, request: Request) -> None:
        self._metrics.worker_started()
        started = self._clock.monotonic()
        try:
            result = await self._reconcile(request)
            if result is not None and not isinstance(result, Result):
                raise TypeError(f"reconcile returned {type(result).__name__}, expected Result or None")
        except PermanentError as err:
            self.permanent_failures[request] = err
            self._metrics.observe("error", self._clock.monotonic() - started, error=True, terminal=True)
            log.error("controller %r: %s failed permanently, not retrying: %s", self.name, request, err)
            return
        except CircuitOpen as err:
            self._metrics.observe("requeue_after", self._clock.monotonic() - started)
            self.queue.add_after(request, err.retry_after or 0.0)
            log.info("controller %r: %s waits for a dependency: %s", self.name, request, err)
            return
        except TransientError as err:
            self._metrics.observe("error", self._clock.monotonic() - started, error=True)
            if err.retry_after is not None:
                self.queue.add_after(request, err.retry_after)
            else:
                self.queue.add_rate_limited(request)
            log.info("controller %r: %s will be retried: %s", self.name, request, err)
            return
        except Exception as err:  # any other failure is a retry with backoff; the worker lives on
            self._metrics.observe("error", self._clock.monotonic() - started, error=True)
            if self.max_retries is not None:
                if self.queue.num_requeues(request) >= self.max_retries:
                    self.queue.forget(request)
                    detail = _status_line(err) if isinstance(err, ApiError) else repr(err)
                    log.error("controller %r: reconcile of %s failed %d times, dropping it until its next "
                              "event: %s", self.name, request, self.max_retries + 1, detail,
                              exc_info=None if isinstance(err, ApiError) else err)  # fmt: skip
                    return
                if isinstance(err, ApiError):  # upstream's "Error syncing deployment", at V(2)
                    self.queue.add_rate_limited(request)
                    log.debug("controller %r: reconcile of %s failed, retrying: %s", self.name, request,
                              _status_line(err))  # fmt: skip
                    return
            self.queue.add_rate_limited(request)
            if isinstance(err, ApiError):
                # The API server's answer (a 409 Conflict is routine): one line, as controller-runtime's
                # "Reconciler error" and kube-controller-manager's utilruntime.HandleError print it.
                log.error("controller %r: reconcile of %s failed: %s", self.name, request, _status_line(err))
            else:  # a bug in the reconciler: where it happened matters
                log.error("controller %r: reconcile of %s failed: %r", self.name, request, err, exc_info=err)
            return
        finally:
            self._metrics.worker_finished()
        self.permanent_failures.pop(request, None)
        self.queue.forget(request)
        if result is not None and result.requeue_after > 0:
            self._metrics.observe("requeue_after", self._clock.monotonic() - started)
            self.queue.add_after(request, result.requeue_after)
        else:
            self._metrics.observe("success", self._clock.monotonic() - started)

    def _register(self, w: Watch) -> None:
        def deliver(event_type: EventType, obj: Any, old: Any = None) -> None:
            try:
                event = Event(event_type, _unwrap(obj), _unwrap(old) if old is not None else None)
                if all(p(event) for p in w.predicates):
                    for request in w.handler.requests(event):
                        self.queue.add(request)
            except Exception as err:  # a broken predicate or handler must not stop the informer
                log.error("controller %r: event handler failed: %r", self.name, err, exc_info=err)

        w.source.add_handler(
            lambda obj: deliver("create", obj),
            lambda old, new: deliver("update", new, old),
            lambda obj: deliver("delete", obj),
        )

    async def _wait_for_sync(self) -> None:
        async def all_synced() -> None:
            await asyncio.gather(*(w.source.wait_for_sync() for w in self.watches))

        try:
            await within(self._clock, self.cache_sync_timeout, all_synced())
        except TimeoutError:
            raise CacheSyncTimeout(
                f"controller {self.name!r}: caches did not sync within {self.cache_sync_timeout} s"
            ) from None


def _unwrap(obj: Any) -> Mapping[str, Any]:
    """Informers may report a delete with a tombstone (client-go ``DeletedFinalStateUnknown``)."""
    if type(obj) is dict:  # every event from an informer: skip the slower ABC check (watch fan-out)
        return obj
    if isinstance(obj, Mapping):
        return obj
    inner = getattr(obj, "obj", None)
    if isinstance(inner, Mapping):
        return inner
    raise TypeError(f"unexpected object from event source: {type(obj).__name__}")
