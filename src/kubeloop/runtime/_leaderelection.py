"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go ``tools/leaderelection``).

A single state machine, so one module. :meth:`LeaderElector.run`:

1. **Acquire**: call :meth:`~LeaderElector.try_acquire_or_renew` every ``retry_period`` (+ up to 1.2x
   jitter from the seeded ``rng``) until it succeeds; then set ``leader_election_master_status`` to 1,
   record the Event ``<identity> became leader`` on the Lease (reason ``LeaderElection``, as
   client-go's ``resourcelock`` does) and start ``on_started_leading()`` in a task.
2. **Renew**: at once, then every ``retry_period`` after a success (client-go ``wait.Until`` runs
   immediately), try again; if no attempt has succeeded within ``renew_deadline`` (each attempt is
   also cut off at that deadline), leadership is **lost**: the metric goes to 0, the leading task is
   cancelled (so the leader's work has stopped within the renew deadline of the first failed
   renewal, before any other candidate may take over at ``lease_duration``), the Event
   ``<identity> stopped leading`` is recorded and ``run`` raises :class:`LeadershipLost`.
   A process that lost its lease must stop acting (controller-runtime exits).
3. **Cancel**: cancelling ``run`` stops the leading task first; with ``release_on_cancel`` it then
   writes an empty holder with a 1 s duration so a candidate can take over at once.
4. ``on_stopped_leading()`` is called whenever ``run`` ends, even if it never led (client-go
   ``Run`` defers ``OnStoppedLeading``); ``on_new_leader(identity)`` on every change of observed holder.

``try_acquire_or_renew`` (exact upstream algorithm): fast path PUT when we hold a lease that is valid
by our own clock; else GET (create when absent); the lease held by someone else is respected while
``observed_time + leaseDurationSeconds`` is in the future, where ``observed_time`` is when *we* last
saw the record change: a remote ``renewTime`` is never compared with the local clock, so clock skew
between machines does not matter. Takeover is a PUT carrying the resourceVersion we read: of two
candidates racing, one gets 409 and loses. ``leaseTransitions`` grows by one per change of holder.

Defaults 15 s / 10 s / 2 s, validated as ``lease_duration > renew_deadline > 1.2 * retry_period``.
Like upstream, this is not fencing: it does not by itself guarantee that only one process acts.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from kubeloop.api import (
    ApiError,
    Clock,
    KindRegistry,
    NotFound,
    ResourceInfo,
    SystemClock,
    format_micro_time,
)
from kubeloop.client import Client
from kubeloop.runtime._deadline import within
from kubeloop.runtime._events import EventRecorder
from kubeloop.runtime._metrics import Metrics

__all__ = ["JITTER_FACTOR", "LeaderElector", "LeadershipLost"]

log = logging.getLogger("kubeloop.runtime.leaderelection")

JITTER_FACTOR = 1.2
_LEASES: ResourceInfo = KindRegistry().by_kind("coordination.k8s.io", "Lease")  # type: ignore[assignment]

class LeadershipLost(Exception):
    """The lease could not be renewed within the renew deadline; the leader must stop."""


class LeaderElector:
    def __init__(
        self,
        client: Client,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = False,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]] | None = None,
        on_stopped_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        metrics: Metrics | None = None,
        events: EventRecorder | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline must be greater than {JITTER_FACTOR} * retry_period")
        if min(lease_duration, renew_deadline, retry_period) < 1:
            raise ValueError("lease_duration, renew_deadline and retry_period must be at least 1 s")
        self.client = client
        self.name, self.namespace, self.identity = name, namespace, identity
        self.lease_duration, self.renew_deadline, self.retry_period = (
            lease_duration,
            renew_deadline,
            retry_period,
        )
        self.release_on_cancel = release_on_cancel
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._rng = rng if rng is not None else random.Random()
        self._metrics = (metrics if metrics is not None else Metrics()).leader(name)
        self._lease: dict[str, Any] | None = None  # the Lease object as last read or written
        self._observed: dict[str, Any] = {}  # its spec
        self._observed_time = float("-inf")  # local monotonic time the spec was last seen to change
        self._reported_leader = ""
        self._leading_task: asyncio.Task[None] | None = None
        self._leading = False
        self.events = events if events is not None else EventRecorder(
            client, component=identity, instance=identity, clock=self._clock
        )
        self.lost = False  # set once leadership was lost (not merely given up on cancellation)

    # -- state ---------------------------------------------------------------------------------

    @property
    def leader(self) -> str:
        """The holder we last observed (``""`` when none)."""
        return str(self._observed.get("holderIdentity") or "")

    def is_leader(self) -> bool:
        return self.leader == self.identity

    def _lease_valid(self) -> bool:
        duration = float(self._observed.get("leaseDurationSeconds") or 0)
        return self._observed_time + duration > self._clock.monotonic()

    def healthy(self, max_tolerable_expired_lease: float = 0.0) -> bool:
        """Watchdog (``HealthzAdaptor``): false when we lead but have not renewed for too long."""
        if not self.is_leader():
            return True
        deadline = self._observed_time + self.lease_duration + max_tolerable_expired_lease
        return self._clock.monotonic() <= deadline

    # -- the algorithm -------------------------------------------------------------------------

    def _record(self, *, transitions: int, acquire_time: str | None = None) -> dict[str, Any]:
        now = format_micro_time(self._clock.now())
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": acquire_time or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _remember(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        self._observed = dict(lease.get("spec") or {})
        self._observed_time = self._clock.monotonic()

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to become or stay the leader (client-go ``tryAcquireOrRenew``)."""
        # Fast path: we hold a lease that is still valid by our clock; write over our own object.
        if self.is_leader() and self._lease_valid() and self._lease is not None:
            record = self._record(
                transitions=int(self._observed.get("leaseTransitions") or 0),
                acquire_time=self._observed.get("acquireTime"),
            )
            try:
                self._remember(await self._put({**self._lease, "spec": record}))
                return True
            except ApiError as err:
                log.info(
                    "lease %s/%s: fast-path renew failed, falling back: %s", self.namespace, self.name, err
                )

        try:
            lease = await self.client.get(_LEASES, self.name, namespace=self.namespace)
        except NotFound:
            body = {
                "apiVersion": _LEASES.api_version,
                "kind": _LEASES.kind,
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._record(transitions=0),
            }
            try:
                self._remember(await self.client.create(_LEASES, body, namespace=self.namespace))
                return True
            except ApiError as err:
                log.info("lease %s/%s: create failed: %s", self.namespace, self.name, err)
                return False
        except ApiError as err:
            log.info("lease %s/%s: get failed: %s", self.namespace, self.name, err)
            return False

        spec = dict(lease.get("spec") or {})
        if spec != self._observed:
            self._observed = spec
            self._observed_time = self._clock.monotonic()
        self._lease = lease
        holder = str(spec.get("holderIdentity") or "")
        if holder and holder != self.identity and self._lease_valid():
            return False  # someone else holds a lease we saw being renewed recently

        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            record = self._record(transitions=transitions, acquire_time=spec.get("acquireTime"))
            self._metrics.slow_path()
        else:
            record = self._record(transitions=transitions + 1)
        try:
            self._remember(await self._put({**lease, "spec": record}))
            return True
        except ApiError as err:  # 409: another candidate won the race
            log.info("lease %s/%s: update failed: %s", self.namespace, self.name, err)
            return False

    async def _put(self, lease: dict[str, Any]) -> dict[str, Any]:
        return await self.client.update(_LEASES, lease, namespace=self.namespace)

    def _report_leader(self) -> None:
        if self.leader != self._reported_leader:
            self._reported_leader = self.leader
            log.info("lease %s/%s: new leader %r", self.namespace, self.name, self.leader)
            if self.on_new_leader is not None:
                self.on_new_leader(self.leader)

    async def _attempt(self, timeout: float) -> bool:
        try:
            ok = await within(self._clock, timeout, self.try_acquire_or_renew())
        except TimeoutError:
            ok = False
        self._report_leader()
        return ok

    # -- loops ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead and renew until cancelled; raise :class:`LeadershipLost` if renewal fails."""
        try:
            try:
                await self._acquire()
                self._leading = True
                self._metrics.leading(True)
                log.info("lease %s/%s: %s became leader", self.namespace, self.name, self.identity)
                await self._announce("became leader")
                if self.on_started_leading is not None:
                    self._leading_task = asyncio.create_task(
                        self.on_started_leading(), name=f"leading:{self.name}"
                    )
                await self._renew()
            except asyncio.CancelledError:
                await self._stop_leading(release=self.release_on_cancel)
                raise
            except BaseException:
                await self._stop_leading(release=False)
                raise
            self.lost = True
            await self._stop_leading(release=False)
        finally:
            if self.on_stopped_leading is not None:
                outcome = self.on_stopped_leading()
                if inspect.isawaitable(outcome):
                    await outcome
        raise LeadershipLost(f"lease {self.namespace}/{self.name}: {self.identity} could not renew in time")

    async def _acquire(self) -> None:
        while not await self._attempt(self.renew_deadline):
            jitter = self._rng.random() * JITTER_FACTOR * self.retry_period
            await self._clock.sleep(self.retry_period + jitter)

    async def _renew(self) -> None:
        """Return when leadership is lost; loop while renewals succeed."""
        while True:
            # PollUntilContextTimeout(RetryPeriod, RenewDeadline, immediate): attempts at 0, 2, 4, 6, 8 s
            # with the defaults; still failing when the deadline passes means leadership is lost.
            deadline = self._clock.monotonic() + self.renew_deadline
            while not await self._attempt(max(0.0, deadline - self._clock.monotonic())):
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    return
                await self._clock.sleep(min(self.retry_period, remaining))
                if self._clock.monotonic() >= deadline:
                    return
            if not self.is_leader():
                return
            await self._clock.sleep(self.retry_period)

    async def _stop_leading(self, *, release: bool) -> None:
        was_leading, self._leading = self._leading, False
        self._metrics.leading(False)
        task, self._leading_task = self._leading_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if was_leading:
            if release:
                await self.release()
            log.info("lease %s/%s: %s stopped leading", self.namespace, self.name, self.identity)
            await self._announce("stopped leading")

    async def _announce(self, what: str) -> None:
        """The Event client-go's ``resourcelock.RecordEvent`` writes on the Lease."""
        if self._lease is not None:
            await self.events.event(self._lease, "Normal", "LeaderElection", f"{self.identity} {what}")

    async def release(self) -> bool:
        """Give the lease up now (empty holder, 1 s duration) if we hold it; True if released."""
        if not self.is_leader() or self._lease is None:
            return False
        now = format_micro_time(self._clock.now())
        record = {
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": int(self._observed.get("leaseTransitions") or 0),
        }
        try:
            self._remember(await self._put({**self._lease, "spec": record}))
        except ApiError as err:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, err)
            return False
        self._report_leader()
        return True
