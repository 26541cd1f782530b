"""Registers the Service controllers (``endpoint``, ``endpointslice``, ``endpointslice-mirroring``) as built-ins.

Importing this module adds their factories to :data:`kubeloop.controllers.BUILTIN_CONTROLLERS` under
kube-controller-manager's ``--controllers`` names, so ``kubeloop controller-manager`` and ``kubeloop up``
run them. Each factory builds its controller on the manager's client and shared informers (Services,
Pods, Endpoints, EndpointSlices and Nodes); the builder has added it to the manager, so the
factory returns a :class:`~kubeloop.controllers._nodes_registry.Built` handle on it.
"""

from __future__ import annotations

from kubeloop.controllers._endpoints import EndpointsController
from kubeloop.controllers._endpointslice import EndpointSliceController
from kubeloop.controllers._endpointslice_mirroring import EndpointSliceMirroringController
from kubeloop.controllers._nodes_registry import Built
from kubeloop.controllers._registry import register_builtin
from kubeloop.runtime import Manager

__all__ = ["register_service_controllers"]


def _endpoints(manager: Manager) -> Built:
    return Built(EndpointsController(manager).controller)


def _endpointslices(manager: Manager) -> Built:
    return Built(EndpointSliceController(manager).controller)


def _endpointslice_mirroring(manager: Manager) -> Built:
    return Built(EndpointSliceMirroringController(manager).controller)


def register_service_controllers() -> None:
    register_builtin(EndpointsController.name, _endpoints)
    register_builtin(EndpointSliceController.name, _endpointslices)
    register_builtin(EndpointSliceMirroringController.name, _endpointslice_mirroring)


register_service_controllers()
