"""The controller's reconcile loop: outcome handling, concurrency, metrics (controller-runtime reconcileHandler)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from kubeloop.api import Conflict
from kubeloop.runtime import (
    CacheSyncTimeout,
    Controller,
    EnqueueForObject,
    GenerationChanged,
    ItemExponential,
    Metrics,
    PermanentError,
    Request,
    Result,
    TransientError,
)
from kubeloop.testing import FakeClock

A = Request("ns", "a")


class Source:
    """A stand-in for an informer at the controller's seam: handlers, a sync flag, events on demand."""

    def __init__(self, *, synced: bool = True) -> None:
        self._synced = asyncio.Event()
        if synced:
            self._synced.set()
        self.handlers: list[tuple[Callable[..., None], Callable[..., None], Callable[..., None]]] = []

    def add_handler(
        self, on_add: Callable[..., None], on_update: Callable[..., None], on_delete: Callable[..., None]
    ) -> None:
        self.handlers.append((on_add, on_update, on_delete))

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    def mark_synced(self) -> None:
        self._synced.set()

    def added(self, obj: dict[str, Any]) -> None:
        for h in self.handlers:
            h[0](obj)

    def updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for h in self.handlers:
            h[1](old, new)


def obj(name: str, generation: int = 1, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "generation": generation}}


def total(metrics: Metrics, result: str, controller: str = "c") -> float | None:
    return metrics.sample("controller_runtime_reconcile_total", {"controller": controller, "result": result})


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_success_forgets_backoff_and_counts_success() -> None:
    metrics, seen = Metrics(), []

    async def reconcile(req: Request) -> None:
        seen.append(req)

    c = Controller("c", reconcile, clock=FakeClock(), metrics=metrics)
    c.queue.rate_limiter.when(A)  # an earlier failure
    c.enqueue(A)
    assert await c.process_next()
    assert seen == [A]
    assert c.queue.num_requeues(A) == 0
    assert total(metrics, "success") == 1
    assert total(metrics, "error") == 0  # pre-initialised series


async def test_an_exception_is_a_rate_limited_retry_with_growing_backoff() -> None:
    clock, metrics, calls = FakeClock(), Metrics(), []

    async def reconcile(req: Request) -> None:
        calls.append(clock.monotonic())
        raise RuntimeError("boom")

    c = Controller("c", reconcile, clock=clock, metrics=metrics, rate_limiter=ItemExponential(0.005, 1000))
    c.enqueue(A)
    await c.process_next()
    assert len(c.queue) == 0 and c.queue.waiting == 1
    await clock.advance(0.005)
    await c.process_next()
    await clock.advance(0.010)
    await c.process_next()
    assert calls == pytest.approx([0.0, 0.005, 0.015], abs=1e-6)
    assert c.queue.num_requeues(A) == 3
    assert total(metrics, "error") == 3
    assert metrics.sample("controller_runtime_reconcile_errors_total", {"controller": "c"}) == 3
    c.stop()


async def test_max_retries_logs_api_errors_at_debug_below_the_limit_and_drops_the_key_at_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # kube-controller-manager's Deployment controller (deployment_controller.go handleErr, maxRetries):
    # "Error syncing deployment" at V(2) while NumRequeues < maxRetries, then HandleError and Forget.
    clock, calls = FakeClock(), []

    async def reconcile(req: Request) -> None:
        calls.append(clock.monotonic())
        raise Conflict('Operation cannot be fulfilled on deployments.apps "a": the object has been modified')

    c = Controller("c", reconcile, clock=clock, rate_limiter=ItemExponential(0.005, 1000), max_retries=2)
    with caplog.at_level(logging.DEBUG, logger="kubeloop.runtime.controller"):
        c.enqueue(A)
        await c.process_next()  # no requeue yet: retried
        await clock.advance(0.005)
        await c.process_next()  # one requeue: retried
        await clock.advance(0.010)
        await c.process_next()  # two requeues, the limit: dropped
        await clock.advance(1000)
        assert calls == pytest.approx([0.0, 0.005, 0.015], abs=1e-6)
        assert len(c.queue) == 0 and c.queue.waiting == 0 and c.queue.num_requeues(A) == 0
        assert [(r.levelno, "dropping" in r.getMessage()) for r in caplog.records] == [
            (logging.DEBUG, False), (logging.DEBUG, False), (logging.ERROR, True)]
        assert "failed 3 times" in caplog.records[-1].getMessage() and "409 Conflict" in caplog.records[-1].getMessage()
        c.enqueue(A)  # the key's next event: a fresh count
        await c.process_next()
        assert caplog.records[-1].levelno == logging.DEBUG and c.queue.waiting == 1
    c.stop()


async def test_max_retries_keeps_a_bug_an_error_line_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()

    async def reconcile(req: Request) -> None:
        raise RuntimeError("boom")

    c = Controller("c", reconcile, clock=clock, max_retries=15)
    with caplog.at_level(logging.DEBUG, logger="kubeloop.runtime.controller"):
        c.enqueue(A)
        await c.process_next()
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert caplog.records[0].exc_info is not None and c.queue.waiting == 1
    c.stop()


def test_max_retries_must_not_be_negative() -> None:
    async def reconcile(req: Request) -> None:
        return None

    with pytest.raises(ValueError, match="max_retries"):
        Controller("c", reconcile, max_retries=-1)


async def test_a_permanent_error_is_recorded_and_not_retried() -> None:
    clock, metrics = FakeClock(), Metrics()

    async def reconcile(req: Request) -> None:
        raise PermanentError("spec.image is empty")

    c = Controller("c", reconcile, clock=clock, metrics=metrics)
    c.enqueue(A)
    await c.process_next()
    await clock.advance(2000)
    assert len(c.queue) == 0 and c.queue.waiting == 0
    assert str(c.permanent_failures[A]) == "spec.image is empty"
    assert metrics.sample("controller_runtime_terminal_reconcile_errors_total", {"controller": "c"}) == 1
    assert total(metrics, "error") == 1


async def test_a_permanent_failure_is_cleared_by_a_later_success() -> None:
    outcomes: list[Exception | None] = [PermanentError("bad"), None]

    async def reconcile(req: Request) -> None:
        err = outcomes.pop(0)
        if err is not None:
            raise err

    c = Controller("c", reconcile, clock=FakeClock())
    c.enqueue(A)
    await c.process_next()
    assert A in c.permanent_failures
    c.enqueue(A)  # a new event
    await c.process_next()
    assert A not in c.permanent_failures


async def test_a_transient_error_with_retry_after_waits_exactly_that_long() -> None:
    clock = FakeClock()

    async def reconcile(req: Request) -> None:
        raise TransientError("dependency not ready", retry_after=30)

    c = Controller("c", reconcile, clock=clock)
    c.enqueue(A)
    await c.process_next()
    await clock.advance(29.9)
    assert len(c.queue) == 0
    await clock.advance(0.1)
    assert len(c.queue) == 1
    c.stop()


async def test_requeue_after_resets_backoff_then_adds_after_the_delay() -> None:
    clock, metrics = FakeClock(), Metrics()

    async def reconcile(req: Request) -> Result:
        return Result(requeue_after=60)

    c = Controller("c", reconcile, clock=clock, metrics=metrics)
    for _ in range(4):
        c.queue.rate_limiter.when(A)
    c.enqueue(A)
    await c.process_next()
    assert c.queue.num_requeues(A) == 0
    await clock.advance(59)
    assert len(c.queue) == 0
    await clock.advance(1)
    assert len(c.queue) == 1
    assert total(metrics, "requeue_after") == 1
    c.stop()


async def test_a_wrong_return_type_is_an_error_not_a_crash() -> None:
    async def reconcile(req: Request) -> Any:
        return 42

    c = Controller("c", reconcile, clock=FakeClock())
    c.enqueue(A)
    await c.process_next()
    assert c.queue.num_requeues(A) == 1
    c.stop()


async def test_an_object_with_a_reconcile_method_is_a_reconciler() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        async def reconcile(self, request: Request) -> Result | None:
            self.n += 1
            return None

    r = Counter()
    c = Controller("c", r, clock=FakeClock())
    c.enqueue(A)
    await c.process_next()
    assert r.n == 1


async def test_workers_survive_exceptions_and_process_later_keys() -> None:
    done: list[str] = []

    async def reconcile(req: Request) -> None:
        if req.name == "bad":
            raise ValueError("broken")
        done.append(req.name)

    c = Controller("c", reconcile, clock=FakeClock(), rate_limiter=ItemExponential(1000, 1000))
    runner = asyncio.create_task(c.run())
    c.enqueue(Request("ns", "bad"))
    c.enqueue(Request("ns", "good"))
    await settle()
    assert done == ["good"]
    c.stop()
    await runner


async def test_max_concurrent_reconciles_bounds_parallelism_and_never_overlaps_a_key() -> None:
    metrics = Metrics()
    running: set[Request] = set()
    peak = 0
    overlap = False
    release = asyncio.Event()

    async def reconcile(req: Request) -> None:
        nonlocal peak, overlap
        overlap = overlap or req in running
        running.add(req)
        peak = max(peak, len(running))
        await release.wait()
        running.discard(req)

    c = Controller("c", reconcile, clock=FakeClock(), metrics=metrics, max_concurrent_reconciles=3)
    runner = asyncio.create_task(c.run())
    for i in range(6):
        c.enqueue(Request("ns", str(i)))
    await settle()
    assert peak == 3
    assert metrics.sample("controller_runtime_active_workers", {"controller": "c"}) == 3
    assert metrics.sample("controller_runtime_max_concurrent_reconciles", {"controller": "c"}) == 3
    c.enqueue(Request("ns", "0"))  # "0" is in flight: held back, not given to an idle worker
    release.set()
    await settle()
    c.stop()
    await runner
    assert not overlap


async def test_events_during_a_reconcile_collapse_into_one_more_reconcile() -> None:
    source = Source()
    started, release = asyncio.Event(), asyncio.Event()
    runs = 0

    async def reconcile(req: Request) -> None:
        nonlocal runs
        runs += 1
        started.set()
        await release.wait()

    c = Controller("c", reconcile, clock=FakeClock(), max_concurrent_reconciles=4)
    c.watch(source, EnqueueForObject())
    runner = asyncio.create_task(c.run())
    await c.synced.wait()
    source.added(obj("a"))
    await started.wait()
    for g in range(2, 7):
        source.updated(obj("a", g - 1), obj("a", g))
    release.set()
    await settle()
    assert runs == 2
    c.stop()
    await runner


async def test_workers_wait_until_every_source_has_synced() -> None:
    source = Source(synced=False)
    seen: list[Request] = []

    async def reconcile(req: Request) -> None:
        seen.append(req)

    c = Controller("c", reconcile, clock=FakeClock())
    c.watch(source, EnqueueForObject())
    runner = asyncio.create_task(c.run())
    await settle()
    source.added(obj("a"))
    await settle()
    assert seen == [] and not c.synced.is_set()
    source.mark_synced()
    await c.synced.wait()
    await settle()
    assert seen == [A]
    c.stop()
    await runner


async def test_predicates_filter_events_before_the_queue() -> None:
    source = Source()
    c = Controller("c", lambda req: asyncio.sleep(0), clock=FakeClock())
    c.watch(source, EnqueueForObject(), GenerationChanged())
    runner = asyncio.create_task(c.run())
    await c.synced.wait()
    c.stop()
    await runner
    source.updated(obj("status-only", 3), obj("status-only", 3))  # handlers stay registered
    source.updated(obj("spec", 3), obj("spec", 4))
    assert c.queue.depth == 0  # the queue is shut down: nothing is accepted any more
    c2 = Controller("c2", lambda req: asyncio.sleep(0), clock=FakeClock())
    c2.watch(source, EnqueueForObject(), GenerationChanged())
    c2._register(c2.watches[0])
    source.updated(obj("status-only", 3), obj("status-only", 3))
    source.updated(obj("spec", 3), obj("spec", 4))
    assert c2.queue.depth == 1
    assert await c2.queue.get() == Request("ns", "spec")


async def test_a_failing_handler_does_not_break_the_event_source() -> None:
    source = Source()

    def broken(event: Any) -> bool:
        raise KeyError("oops")

    c = Controller("c", lambda req: asyncio.sleep(0), clock=FakeClock())
    c.watch(source, EnqueueForObject(), broken)
    c._register(c.watches[0])
    source.added(obj("a"))  # must not raise into the informer
    assert c.queue.depth == 0


async def test_a_delete_reported_as_a_tombstone_enqueues_the_object_it_wraps() -> None:
    """client-go's ``DeletedFinalStateUnknown``: the last known object under ``.obj``; any mapping is an object."""

    class Tombstone:
        def __init__(self, obj: dict[str, Any]) -> None:
            self.obj = obj

    source = Source()
    c = Controller("c", lambda req: asyncio.sleep(0), clock=FakeClock())
    c.watch(source, EnqueueForObject())
    c._register(c.watches[0])
    on_delete = source.handlers[0][2]
    on_delete(Tombstone(obj("gone")))
    on_delete(MappingProxyType(obj("proxied")))
    on_delete(object())  # neither: logged, never raised into the informer
    assert c.queue.depth == 2
    assert [await c.queue.get(), await c.queue.get()] == [Request("ns", "gone"), Request("ns", "proxied")]


async def test_stop_lets_the_reconcile_in_hand_finish() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished = False

    async def reconcile(req: Request) -> None:
        nonlocal finished
        started.set()
        await release.wait()
        finished = True

    c = Controller("c", reconcile, clock=FakeClock())
    runner = asyncio.create_task(c.run())
    c.enqueue(A)
    c.enqueue(Request("ns", "b"))
    await started.wait()
    c.stop()
    release.set()
    await runner
    assert finished


async def test_cancelling_run_cancels_the_workers() -> None:
    async def reconcile(req: Request) -> None:
        await asyncio.Event().wait()

    c = Controller("c", reconcile, clock=FakeClock())
    runner = asyncio.create_task(c.run())
    c.enqueue(A)
    await settle()
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert c.queue.shutting_down


async def test_a_source_that_never_syncs_times_out_on_the_controllers_clock() -> None:
    clock = FakeClock()
    c = Controller("c", lambda req: asyncio.sleep(0), clock=clock, cache_sync_timeout=120)
    c.watch(Source(synced=False), EnqueueForObject())
    runner = asyncio.create_task(c.run())
    await settle()
    await clock.advance(119)
    assert not runner.done()
    await clock.advance(1)
    with pytest.raises(CacheSyncTimeout):
        await runner
