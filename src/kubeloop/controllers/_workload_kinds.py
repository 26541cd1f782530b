"""The built-in kinds the workload controllers read and write, and small shared helpers.

Looked up once (:func:`._scheduler_resources.builtin`, which also names pods and claims for the
simulated cluster) so every controller and test names a kind the same way. :func:`int_field` reads
an optional integer (upstream's ``*int32`` with a default). Informer cache keys come from
:func:`kubeloop.runtime.object_key`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._scheduler_resources import PODS, PVCS, builtin

__all__ = [
    "CONTROLLER_MANAGER",
    "CRONJOBS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "JOBS",
    "PODS",
    "PVCS",
    "REPLICASETS",
    "REPLICATIONCONTROLLERS",
    "REVISIONS",
    "STATEFULSETS",
    "int_field",
]

# The field manager (and user agent name) upstream's built-in controllers write with.
CONTROLLER_MANAGER = "kube-controller-manager"

REPLICASETS = builtin("apps", "replicasets")
REPLICATIONCONTROLLERS = builtin("", "replicationcontrollers")
DEPLOYMENTS = builtin("apps", "deployments")
STATEFULSETS = builtin("apps", "statefulsets")
DAEMONSETS = builtin("apps", "daemonsets")
REVISIONS = builtin("apps", "controllerrevisions")
JOBS = builtin("batch", "jobs")
CRONJOBS = builtin("batch", "cronjobs")


def int_field(obj: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    value = (obj or {}).get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
