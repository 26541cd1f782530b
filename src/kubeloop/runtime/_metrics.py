"""Runtime metrics under upstream's names, in a registry owned by one manager.

Names, types and meanings follow client-go ``util/workqueue/metrics.go`` (subsystem ``workqueue``),
controller-runtime ``pkg/internal/controller/metrics`` and ``pkg/metrics/leaderelection.go``, so
dashboards and alerts written for Go controllers read kubeloop's controllers unchanged.

Guarantees:

- Every :class:`Metrics` owns its own ``CollectorRegistry`` (never the process-global one), so tests
  and several managers in one process never collide.
- In-flight gauges (``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds``)
  are computed at scrape time from the queue's own clock, so they are exact rather than sampled.
- Reconcile result series are pre-initialised to 0 per controller (as controller-runtime's
  ``initMetrics`` does): an absent series never has to mean "never happened".
- The labelled series of a queue or a controller are created when first used or first collected,
  whichever comes first, not when the queue or controller is made: a collection (``exposition``,
  ``sample``, anything that collects the registry) sees every series of every queue and controller made
  so far, exactly as if they had been created then. (Creating them is most of the cost of building a
  manager's controllers: a histogram's child makes a value and a label string per bucket; ``kubeloop up``'s
  controller manager builds some thirty of each before it can send its first request.)

kubeloop adds series of its own: ``workqueue_depth_limit_exceeded_total`` counts adds that found the
queue above its configured depth bound; ``kubeloop_circuit_breaker_state{name,state}`` (one-hot),
``kubeloop_circuit_breaker_transitions_total{name,to}`` and ``kubeloop_circuit_breaker_rejected_total{name}``
report each :class:`~kubeloop.runtime.CircuitBreaker`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["BreakerMetrics", "ControllerMetrics", "LeaderMetrics", "Metrics", "QueueMetrics"]

# controller-runtime pkg/metrics/workqueue.go: exponential from 10 ns, factor 10, 12 buckets.
_QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))
# controller-runtime pkg/internal/controller/metrics/metrics.go: 5 ms .. 60 s.
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0,
    40.0, 50.0, 60.0,
)  # fmt: skip
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")
BREAKER_STATES = ("closed", "open", "half-open")


class _PendingSeries:
    """Registered in a registry before the families: collecting the registry collects this first, which
    yields nothing but creates the labelled series still pending, so the families collected next hold them."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def add(self, create: Callable[[], None]) -> None:
        self.pending.append(create)

    def collect(self) -> list[Any]:
        self.flush()
        return []

    def flush(self) -> None:
        while self.pending:
            self.pending.pop(0)()


class Metrics:
    """All runtime metric families, registered in one private registry."""

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.pending = _PendingSeries()
        r.register(self.pending)  # a collector without describe(): it claims no names
        q = ("controller", "name")
        self.wq_depth = Gauge("workqueue_depth", "Current depth of the workqueue.", q, registry=r)
        self.wq_adds = Counter(
            "workqueue_adds", "Total number of adds handled by the workqueue.", q, registry=r
        )
        self.wq_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the workqueue before being requested.",
            q, buckets=_QUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.wq_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the workqueue takes.",
            q, buckets=_QUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.wq_unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads.",
            q, registry=r,
        )  # fmt: skip
        self.wq_longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for the workqueue been running.",
            q, registry=r,
        )  # fmt: skip
        self.wq_retries = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue.", q, registry=r
        )
        self.wq_depth_exceeded = Counter(
            "workqueue_depth_limit_exceeded",
            "Adds that found the workqueue deeper than its configured bound (kubeloop).",
            q, registry=r,
        )  # fmt: skip
        c = ("controller",)
        self.reconcile_total = Counter(
            "controller_runtime_reconcile", "Total number of reconciliations per controller.",
            ("controller", "result"), registry=r,
        )  # fmt: skip
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors", "Total number of reconciliation errors per controller.",
            c, registry=r,
        )  # fmt: skip
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller.", c, registry=r,
        )  # fmt: skip
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller.",
            c, buckets=_RECONCILE_BUCKETS, registry=r,
        )  # fmt: skip
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller.",
            c, registry=r,
        )  # fmt: skip
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller.",
            c,
            registry=r,
        )
        self.leader_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease. Please make sure "
            "to group by name.",
            ("name",), registry=r,
        )  # fmt: skip
        self.leader_slowpath = Counter(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the string used "
            "to identify the lease. Please make sure to group by name.",
            ("name",), registry=r,
        )  # fmt: skip

        self.breaker_state = Gauge(
            "kubeloop_circuit_breaker_state",
            "1 for the state the circuit breaker of a dependency is in (closed, open, half-open), else 0.",
            ("name", "state"), registry=r,
        )  # fmt: skip
        self.breaker_transitions = Counter(
            "kubeloop_circuit_breaker_transitions", "Changes of state of a circuit breaker, by new state.",
            ("name", "to"), registry=r,
        )  # fmt: skip
        self.breaker_rejected = Counter(
            "kubeloop_circuit_breaker_rejected", "Calls not made because the circuit was open.",
            ("name",), registry=r,
        )  # fmt: skip

    def queue(self, name: str, *, controller: str | None = None) -> QueueMetrics:
        return QueueMetrics(self, controller if controller is not None else name, name)

    def controller(self, name: str) -> ControllerMetrics:
        return ControllerMetrics(self, name)

    def leader(self, name: str) -> LeaderMetrics:
        return LeaderMetrics(self, name)

    def breaker(self, name: str) -> BreakerMetrics:
        return BreakerMetrics(self, name)

    def exposition(self) -> bytes:
        """The Prometheus text format of everything in this registry."""
        return generate_latest(self.registry)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's current value (``None`` if absent); convenient for tests and health checks."""
        return self.registry.get_sample_value(name, labels or {})


@dataclass(slots=True)
class QueueMetrics:
    """The workqueue series of one queue (labels ``controller`` and ``name``).

    The labelled children are looked up once (on first use or first collection, see the module
    docstring), not on every add/get/done (a hot path).
    """

    metrics: Metrics
    controller: str
    name: str
    _depth: Any = field(init=False, repr=False, default=None)
    _adds: Any = field(init=False, repr=False, default=None)
    _retries: Any = field(init=False, repr=False, default=None)
    _exceeded: Any = field(init=False, repr=False, default=None)
    _queue_duration: Any = field(init=False, repr=False, default=None)
    _work_duration: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.metrics.pending.add(self._create)

    def _create(self) -> None:
        if self._depth is not None:
            return
        m, lv = self.metrics, (self.controller, self.name)
        self._adds = m.wq_adds.labels(*lv)
        self._retries = m.wq_retries.labels(*lv)
        self._exceeded = m.wq_depth_exceeded.labels(*lv)
        self._queue_duration = m.wq_queue_duration.labels(*lv)
        self._work_duration = m.wq_work_duration.labels(*lv)
        depth = m.wq_depth.labels(*lv)
        depth.set(0)
        self._depth = depth  # last: the others are in place once this is set

    def added(self) -> None:
        if self._depth is None:
            self._create()
        self._adds.inc()
        self._depth.inc()

    def got(self, waited_seconds: float) -> None:
        if self._depth is None:
            self._create()
        self._depth.dec()
        self._queue_duration.observe(max(0.0, waited_seconds))

    def done(self, worked_seconds: float) -> None:
        if self._depth is None:
            self._create()
        self._work_duration.observe(max(0.0, worked_seconds))

    def retried(self) -> None:
        if self._depth is None:
            self._create()
        self._retries.inc()

    def depth_exceeded(self) -> None:
        if self._depth is None:
            self._create()
        self._exceeded.inc()

    def track_in_flight(self, unfinished: Callable[[], float], longest: Callable[[], float]) -> None:
        """Compute the two in-flight gauges at scrape time from the queue's processing state."""
        lv = (self.controller, self.name)

        def create() -> None:
            self.metrics.wq_unfinished.labels(*lv).set_function(unfinished)
            self.metrics.wq_longest.labels(*lv).set_function(longest)

        self.metrics.pending.add(create)


@dataclass(slots=True)
class ControllerMetrics:
    """The controller_runtime_* series of one controller, pre-initialised to 0 (children looked up once,
    on first use or first collection, see the module docstring)."""

    metrics: Metrics
    controller: str
    _totals: dict[str, Any] = field(init=False, repr=False, default_factory=dict)
    _time: Any = field(init=False, repr=False, default=None)
    _errors: Any = field(init=False, repr=False, default=None)
    _terminal: Any = field(init=False, repr=False, default=None)
    _active: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.metrics.pending.add(self._create)

    def _create(self) -> None:
        if self._active is not None:
            return
        m = self.metrics
        for result in RECONCILE_RESULTS:
            if result not in self._totals:
                self._totals[result] = m.reconcile_total.labels(self.controller, result)
        self._time = m.reconcile_time.labels(self.controller)
        self._errors = m.reconcile_errors.labels(self.controller)
        self._terminal = m.terminal_errors.labels(self.controller)
        active = m.active_workers.labels(self.controller)
        active.set(0)
        self._active = active  # last: the others are in place once this is set

    def set_max_concurrent(self, n: int) -> None:
        self.metrics.pending.add(lambda: self.metrics.max_concurrent.labels(self.controller).set(n))

    def worker_started(self) -> None:
        if self._active is None:
            self._create()
        self._active.inc()

    def worker_finished(self) -> None:
        if self._active is None:
            self._create()
        self._active.dec()

    def observe(self, result: str, seconds: float, *, error: bool = False, terminal: bool = False) -> None:
        if self._active is None:
            self._create()
        total = self._totals.get(result)
        if total is None:
            total = self._totals[result] = self.metrics.reconcile_total.labels(self.controller, result)
        total.inc()
        self._time.observe(max(0.0, seconds))
        if error:
            self._errors.inc()
        if terminal:
            self._terminal.inc()


@dataclass(slots=True)
class LeaderMetrics:
    """``leader_election_master_status`` and ``leader_election_slowpath_total`` for one lease."""

    metrics: Metrics
    name: str

    def __post_init__(self) -> None:
        self.metrics.leader_status.labels(self.name).set(0)
        self.metrics.leader_slowpath.labels(self.name)

    def leading(self, is_leader: bool) -> None:
        self.metrics.leader_status.labels(self.name).set(1 if is_leader else 0)

    def slow_path(self) -> None:
        self.metrics.leader_slowpath.labels(self.name).inc()


@dataclass(slots=True)
class BreakerMetrics:
    """The ``kubeloop_circuit_breaker_*`` series of one dependency."""

    metrics: Metrics
    name: str

    def __post_init__(self) -> None:
        m = self.metrics
        for state in BREAKER_STATES:
            m.breaker_transitions.labels(self.name, state)
        m.breaker_rejected.labels(self.name)

    def state(self, current: str) -> None:
        for state in BREAKER_STATES:
            self.metrics.breaker_state.labels(self.name, state).set(1 if state == current else 0)

    def transition(self, to: str) -> None:
        self.metrics.breaker_transitions.labels(self.name, to).inc()

    def rejected(self) -> None:
        self.metrics.breaker_rejected.labels(self.name).inc()
