"""Resource quantities and the built-in kinds the simulated cluster controllers use.

:func:`parse_quantity` reads a Kubernetes ``resource.Quantity`` string (``100m``, ``1Gi``, ``2e3``,
``500M``, ``1E``) as a float in base units, by upstream's grammar (:mod:`kubeloop.api._quantity`);
:func:`pod_requests` sums a pod's requests the way the scheduler's ``computePodResourceRequest``
does (max of the sum of containers and each init container, plus overhead). Invalid quantities count as zero: the API server validates them, and a
controller must not crash on what it did not write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import BUILTIN_RESOURCES, ResourceInfo
from kubeloop.api._quantity import QuantityError
from kubeloop.api._quantity import parse_quantity as parse_exact

__all__ = [
    "LEASES",
    "NODES",
    "PDBS",
    "PODS",
    "PVCS",
    "PVS",
    "SERVICES",
    "STORAGE_CLASSES",
    "builtin",
    "parse_quantity",
    "pod_requests",
]


def builtin(group: str, plural: str) -> ResourceInfo:
    for info in BUILTIN_RESOURCES:
        if info.group == group and info.plural == plural:
            return info
    raise LookupError(f"{plural}.{group} is not a built-in resource")


PODS = builtin("", "pods")
NODES = builtin("", "nodes")
SERVICES = builtin("", "services")
PVCS = builtin("", "persistentvolumeclaims")
PVS = builtin("", "persistentvolumes")
LEASES = builtin("coordination.k8s.io", "leases")
PDBS = builtin("policy", "poddisruptionbudgets")
STORAGE_CLASSES = builtin("storage.k8s.io", "storageclasses")

def parse_quantity(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    try:
        return parse_exact(str(value).strip()).approximate()
    except QuantityError:
        return 0.0


def _requests(container: Mapping[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    # A limit without a request defaults the request to the limit (API defaulting).
    merged = {**limits, **requests}
    return {name: parse_quantity(q) for name, q in merged.items()}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """What a pod asks of a node: cpu (cores), memory (bytes), any other named resource."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for container in spec.get("containers") or ():
        for name, amount in _requests(container).items():
            total[name] = total.get(name, 0.0) + amount
    for container in spec.get("initContainers") or ():
        for name, amount in _requests(container).items():
            total[name] = max(total.get(name, 0.0), amount)
    for name, amount in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, 0.0) + parse_quantity(amount)
    return total
