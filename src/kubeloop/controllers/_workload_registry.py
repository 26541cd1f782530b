"""Registers the workload controllers (``replicaset``, ``deployment``, ``statefulset``) as built-ins.

Importing this module adds their factories to :data:`kubeloop.controllers.BUILTIN_CONTROLLERS`
(kube-controller-manager's ``--controllers`` names), so ``kubeloop controller-manager`` and
``kubeloop up`` run them. Each factory builds its controller on the manager's client, clock,
metrics and shared informers, adds its Event writer (:class:`._workload_events.EventSink`) to the
manager as a runnable of its own (outside leader election: it only writes what the leading controller
emitted, and needs no graceful stop), and returns the :class:`~kubeloop.runtime.Controller`.
"""

from __future__ import annotations

from kubeloop.controllers._deployment import DeploymentController
from kubeloop.controllers._registry import register_builtin
from kubeloop.controllers._replicaset import ReplicaSetController
from kubeloop.controllers._statefulset import StatefulSetController
from kubeloop.runtime import Controller, Manager

__all__ = ["register_workload_controllers"]


def _replicaset(manager: Manager) -> Controller:
    built = ReplicaSetController(manager.client, manager.informers, clock=manager.clock, metrics=manager.metrics)
    manager.add(built.events, needs_leader_election=False)
    return built.controller


def _deployment(manager: Manager) -> Controller:
    built = DeploymentController(manager.client, manager.informers, clock=manager.clock, metrics=manager.metrics)
    manager.add(built.events, needs_leader_election=False)
    return built.controller


def _statefulset(manager: Manager) -> Controller:
    built = StatefulSetController(manager.client, manager.informers, clock=manager.clock, metrics=manager.metrics)
    manager.add(built.events, needs_leader_election=False)
    return built.controller


def register_workload_controllers() -> None:
    register_builtin("replicaset", _replicaset)
    register_builtin("deployment", _deployment)
    register_builtin("statefulset", _statefulset)


register_workload_controllers()
