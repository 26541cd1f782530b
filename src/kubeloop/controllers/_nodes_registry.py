"""Registers the simulated cluster's controllers as built-ins, and builds them all at once.

Names (kube-controller-manager's where one exists): ``node-simulator``, ``nodelifecycle``,
``taint-eviction-controller``, ``kubelet-simulator``, ``scheduler``, ``persistentvolume-binder``,
``storage-protection``, ``disruption``. Importing this module adds their factories to :data:`kubeloop.controllers.BUILTIN_CONTROLLERS`, so ``kubeloop
controller-manager`` and ``kubeloop up`` run them. Each factory builds its controllers on the
manager (which registers them there) and returns a :class:`Built` handle: it runs nothing itself
and reports synced when the controllers it built have synced.

:func:`add_simulated_cluster` builds all of them on a manager with one :class:`SimulationOptions`,
which is what tests and embedders use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from kubeloop.controllers._kubelet import KubeletSimulator
from kubeloop.controllers._node_lifecycle import NodeLifecycleController
from kubeloop.controllers._nodes import NodeSimulator, SimulationOptions
from kubeloop.controllers._pdb import DisruptionController
from kubeloop.controllers._registry import register_builtin
from kubeloop.controllers._scheduler import Scheduler
from kubeloop.controllers._taint_eviction_controller import TaintEvictionController
from kubeloop.controllers._volume import PersistentVolumeController
from kubeloop.controllers._volume_protection import VolumeProtectionController
from kubeloop.runtime import Controller, Manager

__all__ = ["Built", "SimulatedCluster", "add_simulated_cluster", "register_simulation_controllers"]


class Built:
    """A handle on controllers already added to a manager: idles when run (until stopped, so a manager's
    graceful shutdown does not wait on it), synced when they are."""

    def __init__(self, *controllers: Controller) -> None:
        self.controllers = controllers
        self._stopped = asyncio.Event()

    def has_synced(self) -> bool:
        return all(c.synced.is_set() for c in self.controllers)

    async def run(self) -> None:
        await self._stopped.wait()

    def stop(self) -> None:
        self._stopped.set()


@dataclass(frozen=True)
class SimulatedCluster:
    nodes: NodeSimulator
    lifecycle: NodeLifecycleController
    taint_eviction: TaintEvictionController
    kubelet: KubeletSimulator
    scheduler: Scheduler
    volumes: PersistentVolumeController
    protection: VolumeProtectionController
    disruption: DisruptionController


def add_simulated_cluster(manager: Manager, options: SimulationOptions | None = None) -> SimulatedCluster:
    """Build every simulated-cluster controller on ``manager`` (before it runs)."""
    options = options or SimulationOptions()
    return SimulatedCluster(
        nodes=NodeSimulator(manager, options), lifecycle=NodeLifecycleController(manager),
        taint_eviction=TaintEvictionController(manager), kubelet=KubeletSimulator(manager, options),
        scheduler=Scheduler(manager), volumes=PersistentVolumeController(manager),
        protection=VolumeProtectionController(manager), disruption=DisruptionController(manager),
    )


def _node_simulator(manager: Manager) -> Built:
    return Built(NodeSimulator(manager).controller)


def _nodelifecycle(manager: Manager) -> Built:
    return Built(NodeLifecycleController(manager).controller)


def _taint_eviction(manager: Manager) -> Built:
    return Built(TaintEvictionController(manager).controller)


def _kubelet_simulator(manager: Manager) -> Built:
    return Built(KubeletSimulator(manager).controller)


def _scheduler(manager: Manager) -> Built:
    return Built(Scheduler(manager).controller)


def _persistentvolume_binder(manager: Manager) -> Built:
    built = PersistentVolumeController(manager)
    return Built(built.claims, built.volumes)


def _storage_protection(manager: Manager) -> Built:
    built = VolumeProtectionController(manager)
    return Built(built.claims, built.volumes)


def _disruption(manager: Manager) -> Built:
    return Built(DisruptionController(manager).controller)


FACTORIES: dict[str, Callable[[Manager], Built]] = {
    "node-simulator": _node_simulator,
    "nodelifecycle": _nodelifecycle,
    "taint-eviction-controller": _taint_eviction,
    "kubelet-simulator": _kubelet_simulator,
    "scheduler": _scheduler,
    "persistentvolume-binder": _persistentvolume_binder,
    "storage-protection": _storage_protection,
    "disruption": _disruption,
}


def register_simulation_controllers() -> None:
    for name, factory in FACTORIES.items():
        register_builtin(name, factory)


register_simulation_controllers()
