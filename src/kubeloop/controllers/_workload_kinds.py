"""The built-in kinds the workload controllers read and write, and small shared helpers.

Looked up once from :data:`kubeloop.api.BUILTIN_RESOURCES` so every controller and test names a kind
the same way. :func:`key_of` is the informer cache key (``namespace/name``); :func:`int_field`
reads an optional integer (upstream's ``*int32`` with a default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import BUILTIN_RESOURCES, ResourceInfo

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


def _find(group: str, kind: str) -> ResourceInfo:
    for info in BUILTIN_RESOURCES:
        if info.group == group and info.kind == kind:
            return info
    raise LookupError(f"{kind}.{group} is not a built-in resource")


PODS = _find("", "Pod")
PVCS = _find("", "PersistentVolumeClaim")
REPLICASETS = _find("apps", "ReplicaSet")
DEPLOYMENTS = _find("apps", "Deployment")
STATEFULSETS = _find("apps", "StatefulSet")


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def int_field(obj: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    value = (obj or {}).get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
