"""When the scheduler looks at a pod again: which pods it schedules, and which events requeue them.

The scheduling queue's predicates and queueing hints (``pkg/scheduler/eventhandlers.go`` and
``pkg/scheduler/internal/queue``, Kubernetes 1.32), as plain functions the scheduler's informer
handlers and event filters call:

- :func:`wants_scheduling`: a pod without ``spec.nodeName``, not being deleted, for this scheduler
  (``schedulerName``, ``default-scheduler`` when unset), with no scheduling gates, not finished;
- :func:`committed`: the node a pod holds resources on (bound and not finished);
- :func:`waits_for_other_pods`: a pod whose filters count other pods (required pod affinity or
  spread constraints), which another pod's arrival or relabelling may let in;
- :func:`pod_updated`: ``isPodUpdated``, an update beyond status and bookkeeping metadata (a status
  write, the scheduler's own included, does not requeue a pending pod);
- :func:`node_changed`: a node event that can make a waiting pod fit (a new node, or a change to its
  spec, labels or allocatable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._scheduler_cache import has_pod_affinity
from kubeloop.runtime import Event

__all__ = ["committed", "key_of", "node_changed", "pod_updated", "waits_for_other_pods", "wants_scheduling"]

Key = tuple[str, str]


def key_of(pod: Mapping[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def committed(pod: Mapping[str, Any]) -> str:
    """The node a pod holds resources on ('' when none: unbound or finished)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return ""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def wants_scheduling(pod: Mapping[str, Any], scheduler_name: str) -> bool:
    spec = pod.get("spec") or {}
    return (not spec.get("nodeName") and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and (spec.get("schedulerName") or "default-scheduler") == scheduler_name
            and not spec.get("schedulingGates")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def waits_for_other_pods(pod: Mapping[str, Any]) -> bool:
    """A pod whose filters need other pods present: required pod affinity, or spread constraints."""
    spec = pod.get("spec") or {}
    return bool(spec.get("topologySpreadConstraints") or has_pod_affinity(pod))


def pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The scheduling queue's ``isPodUpdated``: a change beyond status, resourceVersion, generation,
    managedFields and finalizers."""
    def strip(pod: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (pod.get("metadata") or {}).items()
                if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
        return {**{k: v for k, v in pod.items() if k != "status"}, "metadata": meta}
    return strip(old) != strip(new)


def node_changed(event: Event) -> bool:
    """Node events that can make a waiting pod fit: new nodes, and changes to what the filters read."""
    if event.type != "update" or event.old_object is None:
        return event.type == "create"
    old, new = event.old_object, event.object
    return bool(old.get("spec") != new.get("spec")
                or (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels")
                or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"))
