"""Registers the workload controllers (``replicaset``, ``replicationcontroller``, ``deployment``, ``statefulset``, ``daemonset``, ``job``, ``cronjob``) and
``ttl-after-finished`` (:mod:`._ttl_after_finished`, which deletes finished Jobs) and ``horizontal-pod-autoscaler``
(:mod:`._hpa`, which scales their targets) as built-ins.

Importing this module adds their factories to :data:`kubeloop.controllers.BUILTIN_CONTROLLERS`
(kube-controller-manager's ``--controllers`` names), so ``kubeloop controller-manager`` and
``kubeloop up`` run them. Each factory builds its controller on the manager's client, clock,
metrics and shared informers, adds its Event writer (:class:`._events.EventSink`) to the
manager as a runnable of its own (outside leader election: it only writes what the leading controller
emitted, and needs no graceful stop), and returns the :class:`~kubeloop.runtime.Controller`.
"""

from __future__ import annotations

from collections.abc import Callable

from kubeloop.controllers._cronjob import CronJobController
from kubeloop.controllers._daemonset import DaemonSetController
from kubeloop.controllers._deployment import DeploymentController
from kubeloop.controllers._hpa import HorizontalPodAutoscalerController
from kubeloop.controllers._hpa import build as build_hpa_controller
from kubeloop.controllers._job import JobController
from kubeloop.controllers._registry import register_builtin
from kubeloop.controllers._replicaset import ReplicaSetController
from kubeloop.controllers._replication_manager import ReplicationManager
from kubeloop.controllers._statefulset import StatefulSetController
from kubeloop.controllers._ttl_after_finished import TTLAfterFinishedController
from kubeloop.controllers._workload_base import WorkloadController
from kubeloop.runtime import Controller, Manager

__all__ = ["register_workload_controllers"]


def _factory(cls: type[WorkloadController]) -> Callable[[Manager], Controller]:
    def build(manager: Manager) -> Controller:
        built = cls(manager.client, manager.informers, clock=manager.clock, metrics=manager.metrics)
        manager.add(built.events, needs_leader_election=False)
        for extra in built.extra_controllers():
            manager.add_controller(extra)
        return built.controller

    return build


_FACTORIES = {cls.name: _factory(cls) for cls in (ReplicaSetController, ReplicationManager, DeploymentController, StatefulSetController,
                                                  DaemonSetController, JobController, CronJobController)}


def _ttl_after_finished(manager: Manager) -> Controller:
    return TTLAfterFinishedController(manager).controller


_FACTORIES[TTLAfterFinishedController.name] = _ttl_after_finished
_FACTORIES[HorizontalPodAutoscalerController.name] = build_hpa_controller


def register_workload_controllers() -> None:
    for name, factory in _FACTORIES.items():
        register_builtin(name, factory)


register_workload_controllers()
