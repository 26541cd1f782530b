"""The builder: wire a controller into a manager the way controller-runtime's ``builder`` does.

::

    Builder(manager).for_(DEPLOYMENTS, GenerationChanged()).owns(REPLICASETS).build(reconciler)

- ``for_(kind)``: the kind the controller reconciles; its events enqueue the object itself. Exactly one.
- ``owns(kind)``: events on objects of that kind enqueue their *controlling* owner of the ``for_``
  kind (``controller: true`` ownerReference), so a reconciler notices its children changing.
- ``watches(kind, handler)``: any other source, mapped to requests by a handler (e.g. ``EnqueueMapped``).
- Predicates per watch, and ``with_event_filter`` for predicates on every watch.
- ``with_options(max_concurrent_reconciles=..., rate_limiter=..., max_queue_depth=...)``.

All watches share the manager's informers (one list and one watch per kind for the whole process),
clock and metrics registry. The controller's name defaults to the lowercased ``for_`` kind and must
be unique within the manager.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubeloop.api import ResourceInfo
from kubeloop.runtime._controller import Controller, Watch
from kubeloop.runtime._handlers import EnqueueForObject, EnqueueForOwner, Handler
from kubeloop.runtime._manager import Manager
from kubeloop.runtime._predicates import PredicateFn
from kubeloop.runtime._ratelimit import RateLimiter
from kubeloop.runtime._reconcile import ReconcileFunc, Reconciler

__all__ = ["Builder"]


@dataclass(frozen=True, slots=True)
class _Spec:
    resource: ResourceInfo
    handler: Handler | None  # None: the owner handler, built once for_ is known
    predicates: tuple[PredicateFn, ...]
    only_controller: bool = True


class Builder:
    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._name: str | None = None
        self._for: _Spec | None = None
        self._others: list[_Spec] = []
        self._global: tuple[PredicateFn, ...] = ()
        self._max_concurrent = 1
        self._rate_limiter: RateLimiter | None = None
        self._max_queue_depth: int | None = None
        self._cache_sync_timeout = 120.0

    def named(self, name: str) -> Builder:
        self._name = name
        return self

    def for_(self, resource: ResourceInfo, *predicates: PredicateFn) -> Builder:
        if self._for is not None:
            raise ValueError("for_() may only be called once; use watches() for other kinds")
        self._for = _Spec(resource, EnqueueForObject(), predicates)
        return self

    def owns(self, resource: ResourceInfo, *predicates: PredicateFn, only_controller: bool = True) -> Builder:
        self._others.append(_Spec(resource, None, predicates, only_controller))
        return self

    def watches(self, resource: ResourceInfo, handler: Handler, *predicates: PredicateFn) -> Builder:
        self._others.append(_Spec(resource, handler, predicates))
        return self

    def with_event_filter(self, *predicates: PredicateFn) -> Builder:
        self._global = (*self._global, *predicates)
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int | None = None,
        rate_limiter: RateLimiter | None = None,
        max_queue_depth: int | None = None,
        cache_sync_timeout: float | None = None,
    ) -> Builder:
        if max_concurrent_reconciles is not None:
            self._max_concurrent = max_concurrent_reconciles
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        if max_queue_depth is not None:
            self._max_queue_depth = max_queue_depth
        if cache_sync_timeout is not None:
            self._cache_sync_timeout = cache_sync_timeout
        return self

    def build(self, reconciler: Reconciler | ReconcileFunc) -> Controller:
        """Create the controller, register it with the manager, and return it."""
        if self._for is None:
            raise ValueError("for_() must be called: it names the kind the controller reconciles")
        primary = self._for.resource
        name = self._name or primary.kind.lower()
        watches: list[Watch] = []
        for spec in (self._for, *self._others):
            handler = spec.handler or EnqueueForOwner(primary, only_controller=spec.only_controller)
            source = self._manager.informer(spec.resource)
            watches.append(Watch(source, handler, (*self._global, *spec.predicates)))
        controller = Controller(
            name, reconciler, watches=watches, max_concurrent_reconciles=self._max_concurrent,
            clock=self._manager.clock, metrics=self._manager.metrics, rate_limiter=self._rate_limiter,
            max_queue_depth=self._max_queue_depth, cache_sync_timeout=self._cache_sync_timeout,
        )  # fmt: skip
        self._manager.add_controller(controller)
        return controller
