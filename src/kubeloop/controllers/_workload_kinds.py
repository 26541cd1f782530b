"""The built-in kinds the workload controllers read and write, and small shared helpers.

Looked up once (:func:`._scheduler_resources.builtin`, which also names pods and claims for the
simulated cluster) so every controller and test names a kind the same way. :func:`key_of` is the
informer cache key (``namespace/name``); :func:`int_field` reads an optional integer (upstream's
``*int32`` with a default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._scheduler_resources import PODS, PVCS, builtin

__all__ = [
    "CONTROLLER_MANAGER",
    "DEPLOYMENTS",
    "PODS",
    "PVCS",
    "REPLICASETS",
    "STATEFULSETS",
    "int_field",
    "key_of",
]

# The field manager (and user agent name) upstream's built-in controllers write with.
CONTROLLER_MANAGER = "kube-controller-manager"

REPLICASETS = builtin("apps", "replicasets")
DEPLOYMENTS = builtin("apps", "deployments")
STATEFULSETS = builtin("apps", "statefulsets")


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def int_field(obj: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    value = (obj or {}).get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
