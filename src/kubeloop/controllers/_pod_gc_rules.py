"""What the pod garbage collector decides about one pod or node, as pure functions over JSON dicts.

Upstream (release 1.32): k/k ``pkg/controller/podgc/gc_controller.go`` (``isPodTerminated``,
``isPodTerminating``, ``byEvictionAndCreationTimestamp``, the node test of ``gcTerminating``,
``markFailedAndDeletePodWithCondition``), ``pkg/kubelet/eviction/helpers.go`` (``PodIsEvicted``) and
``pkg/api/v1/pod/util.go`` (``UpdatePodCondition``).

- :func:`is_terminated`: the phase is none of ``Pending``, ``Running``, ``Unknown`` (so ``Succeeded``
  and ``Failed``); :func:`is_terminating`: the pod has a ``deletionTimestamp``.
- :func:`deletion_order` is ``byEvictionAndCreationTimestamp`` as a sort key: evicted pods (phase
  ``Failed``, reason ``Evicted``) first, so that the terminated pods of controllers are kept longer,
  then the oldest ``creationTimestamp``, then the name.
- :func:`is_out_of_service`: the node's Ready condition is not ``True`` and it has a taint with key
  ``node.kubernetes.io/out-of-service``, whatever its value and effect (``TaintKeyExists``).
- :func:`failed_status_patch`: the strategic merge patch of the pod's status (``utilpod.PatchPodStatus``:
  the two-way patch from the old status to the new, with the pod's UID as precondition) that turns a
  pod that has not finished into ``phase: Failed``, with a condition when one is given, set as
  ``UpdatePodCondition`` sets it (in place of one of its type, keeping that one's
  ``lastTransitionTime`` when the status is the same): conditions merge by type, so the patch carries
  the changed one and ``$setElementOrder/conditions``, and other writers' conditions are kept.
  ``None`` for a pod that already finished (Succeeded or Failed), which upstream deletes without a patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import format_time, parse_time, uid_of
from kubeloop.controllers._nodes import is_node_ready

__all__ = [
    "OUT_OF_SERVICE_TAINT",
    "TERMINATED_INDEX",
    "deletion_order",
    "failed_status_patch",
    "index_terminated",
    "is_evicted",
    "is_out_of_service",
    "is_terminated",
    "is_terminating",
]

Obj = Mapping[str, Any]

OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"  # core/v1 TaintNodeOutOfService
TERMINATED_INDEX = "kubeloop-pod-gc-terminated"  # pods whose phase is terminal, under the value "true"
_RUNNING_PHASES = frozenset({"Pending", "Running", "Unknown"})


def _status(pod: Obj) -> Mapping[str, Any]:
    status = pod.get("status")
    return status if isinstance(status, Mapping) else {}


def is_terminated(pod: Obj) -> bool:
    return _status(pod).get("phase") not in _RUNNING_PHASES


def is_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def index_terminated(pod: Obj) -> list[str]:
    """The index function of :data:`TERMINATED_INDEX`."""
    return ["true"] if is_terminated(pod) else []


def is_evicted(pod: Obj) -> bool:
    status = _status(pod)
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def _created(pod: Obj) -> float:
    value = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(value) if isinstance(value, str) else 0.0
    except ValueError:
        return 0.0


def deletion_order(pod: Obj) -> tuple[bool, float, str]:
    """``byEvictionAndCreationTimestamp``: sorting by this puts the pods to delete first first."""
    return not is_evicted(pod), _created(pod), str((pod.get("metadata") or {}).get("name") or "")


def is_out_of_service(node: Obj) -> bool:
    taints = (node.get("spec") or {}).get("taints") or ()
    tainted = any(isinstance(t, Mapping) and t.get("key") == OUT_OF_SERVICE_TAINT for t in taints)
    return tainted and not is_node_ready(node)


def _with_condition(conditions: list[dict[str, Any]], condition: Mapping[str, Any], now: str) -> list[dict[str, Any]]:
    """``UpdatePodCondition``: ``condition`` in place of the one of its type, else appended."""
    updated = [dict(c) for c in conditions]
    new = {**condition, "lastTransitionTime": now}
    for index, old in enumerate(updated):
        if old.get("type") == condition.get("type"):
            if old.get("status") == condition.get("status") and old.get("lastTransitionTime"):
                new["lastTransitionTime"] = old["lastTransitionTime"]
            updated[index] = new
            return updated
    updated.append(new)
    return updated


def failed_status_patch(pod: Obj, condition: Mapping[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The status patch (strategic) of ``markFailedAndDeletePodWithCondition``; ``None`` when none is sent."""
    status = _status(pod)
    if status.get("phase") in ("Succeeded", "Failed"):
        return None
    new: dict[str, Any] = {"phase": "Failed"}
    if condition is not None:
        old = [c for c in status.get("conditions") or () if isinstance(c, dict)]
        updated = _with_condition(old, condition, format_time(now))
        changed = [c for c in updated if c not in old]
        if changed:
            new["$setElementOrder/conditions"] = [{"type": c.get("type")} for c in updated]
            new["conditions"] = changed
    return {"metadata": {"uid": uid_of(pod)}, "status": new}
