"""The built-in controllers, by name: how a controller manager learns what to run.

:data:`BUILTIN_CONTROLLERS` maps a name (kube-controller-manager's, e.g. ``garbage-collector``,
``namespace``) to a factory ``(manager) -> runnable``. A factory builds its controller on the
manager's client, clock, rng, metrics and shared informers, and returns something with
``async run()`` and a way to tell it has synced: a ``has_synced()`` method or a ``synced``
``asyncio.Event`` (:class:`~kubeloop.runtime.Controller` has the latter), or an object without
``run()`` whose ``controller`` is the runtime Controller it runs (returned as is, so that the controller manager can
configure it before the manager starts: the root CA publisher's CA).

:func:`add_builtin_controllers` adds the chosen ones (all by default) to a
:class:`~kubeloop.runtime.Manager`, each needing leader election like upstream's, and registers a
``/readyz`` check ``<name>-synced`` for each, so a manager is ready only when every built-in
controller has synced its caches. Other built-in controllers register here with
:func:`register_builtin` (or by adding to the dict) at import time of this package.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from kubeloop.controllers._admission_policy_status import ValidatingAdmissionPolicyStatusController
from kubeloop.controllers._clusterrole_aggregation import ClusterRoleAggregationController
from kubeloop.controllers._gc import GarbageCollector
from kubeloop.controllers._namespace import NAMESPACES, NamespaceController
from kubeloop.controllers._pod_gc import PodGarbageCollector
from kubeloop.controllers._resource_quota import ResourceQuotaController
from kubeloop.controllers._root_ca_publisher import RootCACertPublisher
from kubeloop.controllers._service_accounts import ServiceAccountsController
from kubeloop.runtime import Controller, Manager, Runnable

__all__ = ["BUILTIN_CONTROLLERS", "ControllerFactory", "add_builtin_controllers", "has_synced", "register_builtin"]

ControllerFactory = Callable[[Manager], Runnable]


def _garbage_collector(manager: Manager) -> Runnable:
    # One monitor per deletable kind, from discovery: the manager's informer where another controller
    # already watches the kind (one list and watch, not two), its own for the rest, so a kind that
    # cannot sync never holds up the manager's informers and CRD kinds come and go (k8s 1.32 GC). The
    # built-in kinds are monitored before discovery answers, so their lists run beside the manager's.
    return GarbageCollector(
        manager.client, clock=manager.clock, rng=manager.rng, metrics=manager.metrics, informers=manager.informers
    )


def _namespace(manager: Manager) -> Runnable:
    return NamespaceController(
        manager.client, informer=manager.informer(NAMESPACES), clock=manager.clock, metrics=manager.metrics
    )


def _clusterrole_aggregation(manager: Manager) -> Runnable:
    return ClusterRoleAggregationController(manager).controller


def _pod_garbage_collector(manager: Manager) -> Any:
    # Returned whole: the controller manager sets its terminated-pod threshold before the manager starts.
    return PodGarbageCollector(manager)


def _resource_quota(manager: Manager) -> Runnable:
    return ResourceQuotaController(manager).controller


def _service_account(manager: Manager) -> Runnable:
    return ServiceAccountsController(manager).controller


def _root_ca_cert_publisher(manager: Manager) -> Any:
    # The CA is set by the controller manager (``--kubeconfig``'s CA) before the manager starts.
    return RootCACertPublisher(manager)


def _admission_policy_status(manager: Manager) -> Runnable:
    return ValidatingAdmissionPolicyStatusController(manager).controller


BUILTIN_CONTROLLERS: dict[str, ControllerFactory] = {
    "garbage-collector": _garbage_collector,
    "namespace": _namespace,
    "clusterrole-aggregation": _clusterrole_aggregation,
    "resourcequota": _resource_quota,
    "pod-garbage-collector": _pod_garbage_collector,
    "serviceaccount": _service_account,
    "root-ca-cert-publisher": _root_ca_cert_publisher,
    ValidatingAdmissionPolicyStatusController.name: _admission_policy_status,
}


def register_builtin(name: str, factory: ControllerFactory) -> None:
    if name in BUILTIN_CONTROLLERS and BUILTIN_CONTROLLERS[name] is not factory:
        raise ValueError(f"a built-in controller named {name!r} is already registered")
    BUILTIN_CONTROLLERS[name] = factory


def has_synced(runnable: Any) -> bool:
    """``runnable.has_synced()``, else ``runnable.synced.is_set()``, else ``True``."""
    check = getattr(runnable, "has_synced", None)
    if callable(check):
        return bool(check())
    synced = getattr(runnable, "synced", None)
    if isinstance(synced, asyncio.Event):
        return synced.is_set()
    return True


def _synced_check(runnable: Runnable) -> Callable[[], bool]:
    return lambda: has_synced(runnable)


def add_builtin_controllers(manager: Manager, *, names: Iterable[str] | None = None) -> dict[str, Runnable]:
    """Add the named built-in controllers (all by default) to ``manager``; returns them by name."""
    chosen = list(BUILTIN_CONTROLLERS) if names is None else list(names)
    unknown = [n for n in chosen if n not in BUILTIN_CONTROLLERS]
    if unknown:
        raise ValueError(f"unknown controller(s): {', '.join(unknown)}; known: {', '.join(sorted(BUILTIN_CONTROLLERS))}")
    added: dict[str, Runnable] = {}
    for name in chosen:
        runnable = BUILTIN_CONTROLLERS[name](manager)
        inner = getattr(runnable, "controller", None)
        if isinstance(runnable, Controller):
            manager.add_controller(runnable)
        elif isinstance(inner, Controller) and not callable(getattr(runnable, "run", None)):
            manager.add_controller(inner)
            manager.health.add_readyz(f"{name}-synced", _synced_check(inner))
            added[name] = runnable
            continue
        else:
            manager.add(runnable, needs_leader_election=True)
        manager.health.add_readyz(f"{name}-synced", _synced_check(runnable))
        added[name] = runnable
    return added
