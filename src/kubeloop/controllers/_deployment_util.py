"""Deployment arithmetic and bookkeeping, as pure functions over JSON dicts.

Upstream: k/k ``pkg/controller/deployment/util/deployment_util.go`` (and ``sync.go``'s
``calculateStatus``). Nothing here reads or writes the API; the controller does.

- Surge and unavailability: ``maxSurge`` percentages round **up**, ``maxUnavailable`` round **down**;
  if both resolve to 0, ``maxUnavailable`` becomes 1 (``ResolveFenceposts``).
- Replica set identity: the new RS is the oldest whose template equals the Deployment's, ignoring
  ``pod-template-hash`` (``FindNewReplicaSet``); the others are old.
- Annotations: ``deployment.kubernetes.io/revision`` (and ``revision-history`` when an old RS is
  brought back by a rollback), ``desired-replicas`` and ``max-replicas`` (proportional scaling).
- Conditions (``Progressing``, ``Available``, ``ReplicaFailure``) with upstream reasons and
  messages; :func:`set_condition` keeps ``lastTransitionTime`` while the status is unchanged and does
  nothing when status and reason are unchanged (``SetDeploymentCondition``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeloop.api import annotations_of, format_time, parse_time
from kubeloop.controllers._workload_hash import equal_ignore_hash
from kubeloop.controllers._workload_kinds import int_field

__all__ = [
    "DESIRED_REPLICAS",
    "MAX_REPLICAS",
    "REVISION",
    "REVISION_HISTORY",
    "by_creation",
    "by_revision",
    "calculate_status",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "find_new_replica_set",
    "get_condition",
    "max_surge",
    "max_unavailable",
    "new_condition",
    "new_rs_new_replicas",
    "remove_condition",
    "resolve_fenceposts",
    "revision_of",
    "scaled_value",
    "set_condition",
    "set_new_replica_set_annotations",
    "set_replicas_annotations",
]

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
MAX_REVISION_HISTORY_CHARS = 2000
_NOT_COPIED = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED_REPLICAS,
    MAX_REPLICAS, "deprecated.deployment.rollback.to",
})  # fmt: skip

# Reasons (deployment_util.go).
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
FAILED_RS_CREATE = "ReplicaSetCreateError"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

Obj = Mapping[str, Any]


def spec_replicas(obj: Obj | None) -> int:
    return int_field((obj or {}).get("spec"), "replicas", 1 if obj is not None else 0)


def status_int(obj: Obj | None, key: str) -> int:
    return int_field((obj or {}).get("status"), key)


# -- surge and unavailability ---------------------------------------------------------------------


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            percent = float(text[:-1])
            exact = percent * total / 100
            return int(math.ceil(exact) if round_up else math.floor(exact))
        return int(text)
    return 0


def _rolling(d: Obj) -> Mapping[str, Any] | None:
    strategy = (d.get("spec") or {}).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    return rolling


def resolve_fenceposts(surge: Any, unavailable: Any, desired: int) -> tuple[int, int]:
    s = scaled_value("25%" if surge is None else surge, desired, round_up=True)
    u = scaled_value("25%" if unavailable is None else unavailable, desired, round_up=False)
    if s == 0 and u == 0:
        u = 1  # both 0 would make a rollout impossible
    return s, u


def max_surge(d: Obj) -> int:
    rolling = _rolling(d)
    if rolling is None:
        return 0
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), spec_replicas(d))[0]


def max_unavailable(d: Obj) -> int:
    rolling = _rolling(d)
    replicas = spec_replicas(d)
    if rolling is None or replicas == 0:
        return 0
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)[1]
    return min(unavailable, replicas)


def new_rs_new_replicas(d: Obj, all_rss: Iterable[Obj | None], new_rs: Obj) -> int:
    """How big the new RS may be now (``NewRSNewReplicas``)."""
    rolling = _rolling(d)
    replicas = spec_replicas(d)
    if rolling is None:
        return replicas
    surge = scaled_value(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    current = sum(spec_replicas(rs) for rs in all_rss if rs is not None)
    max_total = replicas + surge
    if current >= max_total:
        return spec_replicas(new_rs)
    scale_up = min(max_total - current, replicas - spec_replicas(new_rs))
    return spec_replicas(new_rs) + scale_up


# -- replica set identity and order ---------------------------------------------------------------


def _created(obj: Obj) -> float:
    value = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(value) if isinstance(value, str) else 0.0
    except ValueError:
        return 0.0


def by_creation(rs: Obj) -> tuple[float, str]:
    return (_created(rs), str((rs.get("metadata") or {}).get("name")))


def revision_of(obj: Obj) -> int:
    try:
        return int(annotations_of(obj).get(REVISION, "0"))
    except ValueError:
        return 0


def by_revision(rs: Obj) -> tuple[int, float, str]:
    return (revision_of(rs), *by_creation(rs))


def find_new_replica_set(d: Obj, rss: Sequence[Obj]) -> Obj | None:
    template = (d.get("spec") or {}).get("template")
    for rs in sorted(rss, key=by_creation):
        if equal_ignore_hash((rs.get("spec") or {}).get("template"), template):
            return rs
    return None


# -- annotations ----------------------------------------------------------------------------------


def set_replicas_annotations(rs: dict[str, Any], desired: int, maximum: int) -> bool:
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, maximum: int) -> bool:
    annotations = annotations_of(rs)
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(MAX_REPLICAS) != str(maximum)


def set_new_replica_set_annotations(d: Obj, rs: dict[str, Any], new_revision: str, *, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, bump the revision, keep history."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in annotations_of(d).items():
        if key in _NOT_COPIED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    had_revision = REVISION in annotations
    old_revision = annotations.get(REVISION, "")
    try:
        old_int = int(old_revision) if old_revision else 0
        new_int = int(new_revision)
    except ValueError:
        return False
    if old_int < new_int:
        annotations[REVISION] = new_revision
        changed = True
    if had_revision and old_int < new_int:
        # An old RS brought back (rollback): remember the revisions it had.
        history = annotations.get(REVISION_HISTORY, "")
        if not history:
            annotations[REVISION_HISTORY] = old_revision
        else:
            parts = history.split(",")
            total, start = len(history) + len(old_revision) + 1, 0
            while total > MAX_REVISION_HISTORY_CHARS and start < len(parts):
                total -= len(parts[start]) + 1
                start += 1
            if total <= MAX_REVISION_HISTORY_CHARS:
                annotations[REVISION_HISTORY] = ",".join([*parts[start:], old_revision])
    if not exists and set_replicas_annotations(rs, spec_replicas(d), spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


# -- conditions -----------------------------------------------------------------------------------


def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    stamp = format_time(now)
    return {"type": type_, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}  # fmt: skip


def get_condition(status: Obj | None, type_: str) -> dict[str, Any] | None:
    for cond in (status or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: dict[str, Any], type_: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


# -- status ---------------------------------------------------------------------------------------


def calculate_status(all_rss: Sequence[Obj], new_rs: Obj | None, d: Obj, now: float) -> dict[str, Any]:
    """``calculateStatus``: counts from the ReplicaSets' own (observed) status, plus Available."""
    available = sum(status_int(rs, "availableReplicas") for rs in all_rss)
    total = sum(spec_replicas(rs) for rs in all_rss)
    old = d.get("status") or {}
    status: dict[str, Any] = {}
    generation = (d.get("metadata") or {}).get("generation")
    if generation is not None:
        status["observedGeneration"] = generation
    counts = (
        ("replicas", sum(status_int(rs, "replicas") for rs in all_rss)),
        ("updatedReplicas", status_int(new_rs, "replicas") if new_rs is not None else 0),
        ("readyReplicas", sum(status_int(rs, "readyReplicas") for rs in all_rss)),
        ("availableReplicas", available),
        ("unavailableReplicas", max(total - available, 0)),
    )
    for key, value in counts:
        if value:  # omitempty: Go leaves zero counts out of the JSON
            status[key] = value
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if available >= spec_replicas(d) - max_unavailable(d):
        cond = new_condition("Available", "True", MIN_AVAILABLE, "Deployment has minimum availability.", now)
    else:
        cond = new_condition("Available", "False", MIN_UNAVAILABLE, "Deployment does not have minimum availability.", now)
    set_condition(status, cond)
    return status


def deployment_complete(d: Obj, status: Obj) -> bool:
    replicas = spec_replicas(d)
    return (
        int_field(status, "updatedReplicas") == replicas
        and int_field(status, "replicas") == replicas
        and int_field(status, "availableReplicas") == replicas
        and int_field(status, "observedGeneration") >= int_field(d.get("metadata"), "generation")
    )


def deployment_progressing(d: Obj, status: Obj) -> bool:
    old = d.get("status") or {}
    old_old = int_field(old, "replicas") - int_field(old, "updatedReplicas")
    new_old = int_field(status, "replicas") - int_field(status, "updatedReplicas")
    return (
        int_field(status, "updatedReplicas") > int_field(old, "updatedReplicas")
        or new_old < old_old
        or int_field(status, "readyReplicas") > int_field(old, "readyReplicas")
        or int_field(status, "availableReplicas") > int_field(old, "availableReplicas")
    )


def progress_deadline(d: Obj) -> int | None:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    if not isinstance(value, int) or value == 2**31 - 1:
        return None
    return value


def deployment_timed_out(d: Obj, status: Obj, now: float) -> bool:
    deadline = progress_deadline(d)
    if deadline is None:
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    try:
        since = parse_time(str(cond.get("lastUpdateTime")))
    except ValueError:
        return False
    return since + deadline < now
