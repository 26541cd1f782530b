"""kubeloop.runtime: the controller runtime.

The pipeline, one module per stage: informers (reflector, cache, indexers) -> event handlers and
predicates -> work queue (dedup, delaying, rate limiters) -> controller workers -> reconciler; plus
the manager (health, metrics, leader election, quiescence: ``Manager.idle(until=...)``), a circuit
breaker per dependency, an Event recorder, and helpers that make the defensive patterns the easy
ones (controller references, create-or-update, finalizers, status written only on change).
"""

from kubeloop.runtime._breaker import BreakerState, CircuitBreaker, CircuitOpen, failure_unless_answered
from kubeloop.runtime._builder import Builder
from kubeloop.runtime._cache import (
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    Cache,
    IndexFunc,
    index_by_namespace,
    index_by_owner_uid,
    object_key,
)
from kubeloop.runtime._controller import CacheSyncTimeout, Controller, EventSource, Watch
from kubeloop.runtime._delaying import DelayingQueue, RateLimitingQueue
from kubeloop.runtime._events import EVENTS, EventRecorder, event_body, event_name
from kubeloop.runtime._handlers import (
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    Event,
    EventType,
    Handler,
)
from kubeloop.runtime._health import Check, HealthChecks, probe_app
from kubeloop.runtime._helpers import (
    AlreadyOwnedError,
    Mutate,
    OperationResult,
    StatusWriter,
    add_finalizer,
    create_or_patch,
    create_or_update,
    remove_finalizer,
    set_condition,
    set_controller_reference,
    set_owner_reference,
)
from kubeloop.runtime._informer import HandlerRegistration, InformerFactory, SharedInformer
from kubeloop.runtime._leaderelection import LeaderElector, LeadershipLost
from kubeloop.runtime._manager import LeaderElectionOptions, Manager, Runnable, Stoppable
from kubeloop.runtime._metrics import BreakerMetrics, ControllerMetrics, LeaderMetrics, Metrics, QueueMetrics
from kubeloop.runtime._predicates import (
    AnnotationsChanged,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    PredicateFn,
    ResourceVersionChanged,
    all_of,
    any_of,
    negate,
)
from kubeloop.runtime._queue import QueueShutDown, WorkQueue
from kubeloop.runtime._ratelimit import (
    ItemExponential,
    ItemFastSlow,
    MaxOf,
    RateLimiter,
    TokenBucket,
    WithMaxWait,
    default_controller_rate_limiter,
)
from kubeloop.runtime._reconcile import (
    PermanentError,
    ReconcileError,
    ReconcileFunc,
    Reconciler,
    Request,
    Result,
    TransientError,
)
from kubeloop.runtime._reflector import Reflector, ReflectorSink

__all__ = [
    "EVENTS",
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "AlreadyOwnedError",
    "AnnotationsChanged",
    "BreakerMetrics",
    "BreakerState",
    "Builder",
    "Cache",
    "CacheSyncTimeout",
    "Check",
    "CircuitBreaker",
    "CircuitOpen",
    "Controller",
    "ControllerMetrics",
    "DelayingQueue",
    "EnqueueForObject",
    "EnqueueForOwner",
    "EnqueueMapped",
    "Event",
    "EventRecorder",
    "EventSource",
    "EventType",
    "GenerationChanged",
    "Handler",
    "HandlerRegistration",
    "HealthChecks",
    "IndexFunc",
    "InformerFactory",
    "ItemExponential",
    "ItemFastSlow",
    "LabelsChanged",
    "LeaderElectionOptions",
    "LeaderElector",
    "LeaderMetrics",
    "LeadershipLost",
    "Manager",
    "MaxOf",
    "Metrics",
    "Mutate",
    "OperationResult",
    "PermanentError",
    "Predicate",
    "PredicateFn",
    "QueueMetrics",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "ReconcileError",
    "ReconcileFunc",
    "Reconciler",
    "Reflector",
    "ReflectorSink",
    "Request",
    "ResourceVersionChanged",
    "Result",
    "Runnable",
    "SharedInformer",
    "StatusWriter",
    "Stoppable",
    "TokenBucket",
    "TransientError",
    "Watch",
    "WithMaxWait",
    "WorkQueue",
    "add_finalizer",
    "all_of",
    "any_of",
    "create_or_patch",
    "create_or_update",
    "default_controller_rate_limiter",
    "event_body",
    "event_name",
    "failure_unless_answered",
    "index_by_namespace",
    "index_by_owner_uid",
    "negate",
    "object_key",
    "probe_app",
    "remove_finalizer",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
]
