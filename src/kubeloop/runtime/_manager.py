"""The manager: shared informers, controllers and other runnables, leader election, probes, metrics.

Lifecycle of :meth:`Manager.run` (controller-runtime ``pkg/manager``):

1. Start the shared informers, and every runnable that does not need leadership. Informers run on
   standby replicas too, so a new leader starts with warm caches.
2. Without leader election, start the controllers at once. With it, start them when the
   :class:`LeaderElector` acquires the Lease; if the lease is lost, cancel them and let
   :class:`LeadershipLost` propagate: the process must exit rather than keep acting.
3. If any runnable fails, the others are cancelled and its exception propagates.
4. On cancellation (or SIGTERM/SIGINT with :meth:`Manager.run_until_signalled`), controllers (and
   any leader runnable with a ``stop()`` method, see :class:`Stoppable`) first stop taking keys and finish the reconcile in hand (up to ``graceful_shutdown_timeout`` on the
   manager's clock), then everything is cancelled, the lease is released when configured, and the
   informers stop. When leadership is *lost* there is no graceful period (controller-runtime skips
   it too): controllers are cancelled at once, within the renew deadline.

Quiescence: :meth:`Manager.idle` says whether the manager has nothing to do until a given time on
its clock (informers synced, every controller's workers running with an empty queue, nothing in
reconcile, no delayed requeue due by then): what a test on a fake clock can drive time to, instead
of guessing how long reconciles take. A manager that is not running (never started, or stopped) is
never idle, even with no controller at all.

Informers watch every namespace unless ``namespace`` names one. One :class:`Metrics` registry per manager; :meth:`Manager.probe_app` serves ``/healthz``, ``/readyz``
and ``/metrics`` (``readyz`` includes "informers synced"; with leader election, ``healthz`` includes
the lease watchdog). Readiness never depends on reconciles succeeding.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubeloop.api import Clock, ResourceInfo, SystemClock
from kubeloop.client import NAMESPACE_ALL, Client
from kubeloop.runtime._controller import Controller
from kubeloop.runtime._deadline import within
from kubeloop.runtime._health import HealthChecks, probe_app
from kubeloop.runtime._informer import InformerFactory, SharedInformer
from kubeloop.runtime._leaderelection import LeaderElector
from kubeloop.runtime._metrics import Metrics

__all__ = ["LeaderElectionOptions", "Manager", "Runnable", "Stoppable"]

log = logging.getLogger("kubeloop.runtime.manager")


class Runnable(Protocol):
    async def run(self) -> None: ...


@runtime_checkable
class Stoppable(Protocol):
    """A runnable that can be asked to finish what it holds and return from ``run()`` on its own."""

    def stop(self) -> None: ...


def _default_identity() -> str:
    # client-go convention: hostname plus a unique suffix, so two processes on one host differ.
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaderElectionOptions:
    name: str
    namespace: str = "kube-system"
    identity: str = field(default_factory=_default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False
    # Fail /healthz when leading without a renewal for lease_duration + this long (wedged leader).
    max_tolerable_expired_lease: float = 10.0


class Manager:
    def __init__(
        self,
        client: Client,
        *,
        namespace: str = NAMESPACE_ALL,
        leader_election: LeaderElectionOptions | None = None,
        graceful_shutdown_timeout: float = 30.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        metrics: Metrics | None = None,
        informers: InformerFactory | None = None,
    ) -> None:
        self.client = client
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.rng = rng if rng is not None else random.Random()
        self.metrics = metrics if metrics is not None else Metrics()
        self.informers = (
            informers
            if informers is not None
            else InformerFactory(
                client, namespace=namespace, clock=self.clock, rng=random.Random(self.rng.random())
            )
        )
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.health = HealthChecks()
        self.health.add_readyz("informers-synced", self.informers.has_synced)
        self.controllers: dict[str, Controller] = {}
        self._runnables: list[Runnable] = []
        self._leader_runnables: list[Runnable] = []
        self.elector: LeaderElector | None = None
        if leader_election is not None:
            opts = leader_election
            self.elector = LeaderElector(
                client, name=opts.name, namespace=opts.namespace, identity=opts.identity,
                lease_duration=opts.lease_duration, renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period, release_on_cancel=opts.release_on_cancel,
                on_started_leading=self._lead, clock=self.clock, rng=random.Random(self.rng.random()),
                metrics=self.metrics,
            )  # fmt: skip
            elector = self.elector
            self.health.add_healthz(
                "leaderElection", lambda: elector.healthy(opts.max_tolerable_expired_lease)
            )
        self._started = False
        self._stopped = False

    # -- wiring --------------------------------------------------------------------------------

    def informer(self, resource: ResourceInfo) -> SharedInformer:
        return self.informers.informer(resource)

    def add(self, runnable: Runnable, *, needs_leader_election: bool = True) -> None:
        if self._started:
            raise RuntimeError("runnables must be added before the manager starts")
        (self._leader_runnables if needs_leader_election else self._runnables).append(runnable)

    def add_controller(self, controller: Controller) -> None:
        if controller.name in self.controllers:
            raise ValueError(f"a controller named {controller.name!r} is already registered")
        self.controllers[controller.name] = controller
        self.add(controller, needs_leader_election=True)

    def idle(self, *, until: float | None = None) -> bool:
        """Quiescent until ``until`` (``clock.monotonic()`` seconds; default now): the manager runs,
        its informers have synced, and every controller is :meth:`~Controller.idle`: its workers
        started (so a standby replica is never idle), no request queued or being reconciled, no
        delayed requeue (``requeue_after``, a backoff) due at or before ``until``.

        A manager that never ran, or whose :meth:`run` returned (stopped, failed or lost its lease),
        is never idle, with or without controllers: it converges nothing any more, and a test that
        waits for quiescence must not take it for a converged one.

        It sees the manager's own work only: a watch event still on its way from the server is not
        counted, so wait until the server is quiet before asking (``FaultyApp.settle`` in tests).
        """
        if not self._started or self._stopped or not self.informers.has_synced():
            return False
        return all(c.idle(until=until) for c in self.controllers.values())

    def probe_app(self) -> Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]:
        """ASGI app for ``/healthz``, ``/readyz``, ``/metrics`` (serve it with uvicorn or in-process)."""
        return probe_app(self.health, self.metrics)

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled, a runnable fails, or leadership is lost."""
        if self._started:
            raise RuntimeError("a manager runs once")
        self._started = True
        self.informers.start()
        try:
            mains: list[Awaitable[None]] = [r.run() for r in self._runnables]
            mains.append(self.elector.run() if self.elector is not None else self._lead())
            await _run_all(mains)
        finally:
            self._stopped = True
            await self.informers.stop()

    async def run_until_signalled(
        self, signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT)
    ) -> None:
        """:meth:`run` until one of ``signals`` arrives, then shut down gracefully and return."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self.run())
        received: list[signal.Signals] = []

        def on_signal(sig: signal.Signals) -> None:
            received.append(sig)
            task.cancel()

        for sig in signals:
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await task
        except asyncio.CancelledError:
            if not received:
                raise
            log.info("manager: %s received, stopped gracefully", received[0].name)
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _lead(self) -> None:
        """Run what needs leadership; on cancellation give controllers a graceful stop first."""
        tasks = [asyncio.ensure_future(r.run()) for r in self._leader_runnables]
        try:
            await _wait_all(tasks)
        except asyncio.CancelledError:
            if self.elector is not None and self.elector.lost:
                raise  # leadership lost: stop acting now, no graceful period
            for runnable in self._leader_runnables:
                if isinstance(runnable, Stoppable):
                    runnable.stop()
            pending = [t for t in tasks if not t.done()]
            if pending:
                try:
                    await within(self.clock, self.graceful_shutdown_timeout, asyncio.gather(*pending))
                except Exception:
                    log.warning("manager: runnables did not stop within the graceful shutdown timeout")
            raise
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _wait_all(tasks: Sequence[asyncio.Future[None]]) -> None:
    """Wait for all; the first failure cancels the rest and propagates."""
    if not tasks:
        await asyncio.Event().wait()  # nothing to run: idle until cancelled
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            if not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]


async def _run_all(coros: list[Awaitable[None]]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await _wait_all(tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
