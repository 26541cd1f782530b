"""Names every part that deletes must agree on: the server's admission, the garbage collector, the guard.

* :data:`GC_IGNORED_RESOURCES`: (group, resource) pairs the garbage collector never collects (k/k
  ``garbagecollector.go`` ``DefaultIgnoredResources``: Events); the guard's preview skips them too.
* :data:`PROTECT_ANNOTATION` / :data:`APPROVED_ANNOTATION`: kubeloop's deletion protection. An object
  annotated ``kubeloop.dev/protect: "true"`` is deleted only when ``kubeloop.dev/delete-approved`` holds
  ``PLAN/UID`` for it (written by ``kubeloop delete --confirm PLAN``): :func:`is_protected` and
  :func:`approval_value` are that rule, for the server that enforces it and the guard that predicts it.
* :func:`kubectl_name`: the KIND spelling ``kubeloop delete`` accepts and prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "APPROVED_ANNOTATION",
    "GC_IGNORED_RESOURCES",
    "PROTECT_ANNOTATION",
    "approval_value",
    "is_protected",
    "kubectl_name",
]

GC_IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})
PROTECT_ANNOTATION = "kubeloop.dev/protect"
APPROVED_ANNOTATION = "kubeloop.dev/delete-approved"


def approval_value(plan_id: str, uid: str) -> str:
    """The ``kubeloop.dev/delete-approved`` value that lets plan ``plan_id`` delete object ``uid``."""
    return f"{plan_id}/{uid}"


def is_protected(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` carries ``kubeloop.dev/protect: "true"`` (any case)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PROTECT_ANNOTATION, "")).lower() == "true"


def kubectl_name(kind: str, group: str) -> str:
    """``deployment.apps``, ``namespace``: the KIND spelling ``kubeloop delete`` accepts."""
    return f"{kind.lower()}.{group}" if group else kind.lower()
