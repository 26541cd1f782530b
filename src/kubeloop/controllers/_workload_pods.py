"""Pod facts the workload controllers share: active, ready, available, and which pod to delete first.

Upstream sources: k/k ``pkg/api/v1/pod/util.go`` (``IsPodReady``, ``IsPodAvailable``) and
``pkg/controller/controller_utils.go`` (``IsPodActive``, ``ActivePodsWithRanks``,
``GetPodFromTemplate``).

- active: not ``Succeeded``/``Failed`` and no ``deletionTimestamp``.
- ready: condition ``Ready`` is ``True``.
- available: ready, and (``minReadySeconds`` is 0, or ``Ready`` became true strictly more than
  ``minReadySeconds`` ago on the injected clock).
- :func:`slow_start_batch`: creates in batches 1, 2, 4 ..., stopping after the first batch with an
  error, so a quota denial costs one request, not hundreds.
- :func:`deletion_order` sorts pods the way ``ActivePodsWithRanks.Less`` does (first = deleted first):
  unscheduled < scheduled; Pending < Unknown < Running; not ready < ready; lower
  ``controller.kubernetes.io/pod-deletion-cost`` first; more related pods on the same node first;
  ready more recently first (logarithmic buckets, then UID); more container restarts first; newer
  first (logarithmic buckets, then UID).
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kubeloop.api import copy_json, parse_time

__all__ = [
    "POD_DELETION_COST",
    "deletion_order",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "pod_from_template",
    "pod_ready_time",
    "slow_start_batch",
]

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status = pod.get("status")
    return status if isinstance(status, Mapping) else {}


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in _status(pod).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond
    return None


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return _status(pod).get("phase") not in ("Succeeded", "Failed") and not meta.get("deletionTimestamp")


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    cond = _ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def _time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def pod_ready_time(pod: Mapping[str, Any]) -> float | None:
    """When the pod last became ready (``None`` if it is not ready or the time is unknown)."""
    cond = _ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    return _time(cond.get("lastTransitionTime"))


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = pod_ready_time(pod)
    return since is not None and since + min_ready_seconds < now


def pod_from_template(
    template: Mapping[str, Any], *, namespace: str, generate_name: str, owner_ref: Mapping[str, Any]
) -> dict[str, Any]:
    """``GetPodFromTemplate``: labels, annotations and finalizers of the template, our controller ref."""
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {"generateName": generate_name, "namespace": namespace}
    for key in ("labels", "annotations", "finalizers"):
        if tmeta.get(key):
            meta[key] = copy_json(tmeta[key])
    meta["ownerReferences"] = [dict(owner_ref)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy_json(template.get("spec") or {})}


def _node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _cost(pod: Mapping[str, Any]) -> int:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _restarts(pod: Mapping[str, Any]) -> int:
    counts = [
        int(cs.get("restartCount") or 0)
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in _status(pod).get(key) or ()
        if isinstance(cs, Mapping)
    ]
    return max(counts, default=0)


def _log_rank(t: float, now: float) -> int:
    delta_ns = (now - t) * 1e9
    return int(math.log2(delta_ns)) if delta_ns > 0 else -1


def _newer_first(t1: float | None, t2: float | None, uid1: str, uid2: str, now: float) -> int | None:
    """-1 when the first should go first. Zero/unknown times go first (``afterOrZero``)."""
    if t1 == t2:
        return None
    if t1 is None or t2 is None:
        return -1 if t1 is None else 1
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return -1 if uid1 < uid2 else 1 if uid1 > uid2 else 0
    return -1 if diff < 0 else 1


def deletion_order(
    pods: Sequence[Mapping[str, Any]], *, related: Iterable[Mapping[str, Any]] = (), now: float
) -> list[Mapping[str, Any]]:
    """``pods`` sorted so that the ones to delete first come first (``ActivePodsWithRanks``)."""
    per_node = Counter(_node(p) for p in related if is_pod_active(p) and _node(p))
    rank = {id(p): per_node[_node(p)] if _node(p) else 0 for p in pods}

    def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
        na, nb = _node(a), _node(b)
        if na != nb and (not na or not nb):
            return -1 if not na else 1
        pa = _PHASE_ORDINAL.get(str(_status(a).get("phase")), 0)
        pb = _PHASE_ORDINAL.get(str(_status(b).get("phase")), 0)
        if pa != pb:
            return -1 if pa < pb else 1
        ra, rb = is_pod_ready(a), is_pod_ready(b)
        if ra != rb:
            return -1 if not ra else 1
        ca, cb = _cost(a), _cost(b)
        if ca != cb:
            return -1 if ca < cb else 1
        if rank[id(a)] != rank[id(b)]:
            return -1 if rank[id(a)] > rank[id(b)] else 1
        uid_a, uid_b = str((a.get("metadata") or {}).get("uid")), str((b.get("metadata") or {}).get("uid"))
        if ra and rb:
            by_ready = _newer_first(pod_ready_time(a), pod_ready_time(b), uid_a, uid_b, now)
            if by_ready:
                return by_ready
        xa, xb = _restarts(a), _restarts(b)
        if xa != xb:
            return -1 if xa > xb else 1
        by_age = _newer_first(
            _time((a.get("metadata") or {}).get("creationTimestamp")),
            _time((b.get("metadata") or {}).get("creationTimestamp")),
            uid_a, uid_b, now,
        )  # fmt: skip
        return by_age or 0

    return sorted(pods, key=functools.cmp_to_key(compare))


async def slow_start_batch(count: int, create: Callable[[], Awaitable[object]], *, initial: int = 1) -> tuple[int, Exception | None]:
    """Run ``count`` creates in batches of 1, 2, 4 ... (``slowStartBatch``); stop after the first
    batch that had an error. Returns the number that succeeded and the first error, if any."""
    remaining, successes, batch = count, 0, min(count, initial)
    while batch > 0:
        results = await asyncio.gather(*(create() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for err in errors:
            if not isinstance(err, Exception):
                raise err
        successes += batch - len(errors)
        if errors:
            first = errors[0]
            assert isinstance(first, Exception)
            return successes, first
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None
