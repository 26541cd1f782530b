"""DefaultPreemption: which pods to evict so a higher-priority pod fits, and on which node.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` and
``pkg/scheduler/framework/preemption/preemption.go``, as of Kubernetes 1.32. These functions hold
no state and call nothing; the scheduler (:mod:`._scheduler`) supplies the pods on a node and a
``fits`` function that reruns the filters with some pods removed, and performs the result.

- :func:`pod_priority` / :func:`eligible_to_preempt`: ``spec.priority`` (0 when unset) and
  ``PodEligibleToPreemptOthers``: ``preemptionPolicy: Never`` is not eligible ("not eligible due to
  preemptionPolicy=Never."), nor is a pod whose nominated node (unless the filters found it
  UnschedulableAndUnresolvable) still holds a lower-priority pod terminating because the scheduler
  preempted it ("not eligible due to a terminating pod on the nominated node.").
- :func:`select_victims` is ``SelectVictimsOnNode``: every pod of lower priority is removed; if the
  pod still does not fit, the node's failure is the filters' reasons (no lower-priority pod at all:
  ``No preemption victims found for incoming pod``). Otherwise the removed pods, most important
  first (``MoreImportantPod``: higher priority, then earlier start), are split by
  :func:`split_by_pdb` (``filterPodsWithPDBViolation``) and reprieved in turn, PDB-violating ones
  first: a pod the preemptor still fits beside goes back on the node; the others are the victims,
  counting how many violate a budget.
- :func:`pick_node` is ``pickOneNodeForPreemption``: fewest PDB violations, then the lowest highest
  victim priority, the smallest sum of priorities (each offset by 2^31), the fewest victims, the
  latest earliest start time among the highest-priority victims, then the first candidate. Upstream
  walks candidates from a random offset in parallel and iterates a map, so its final tie-break is
  arbitrary; here candidates are in node-name order.
- :func:`candidate_count` is ``GetOffsetAndNumCandidates``' count (10% of the nodes, at least 100),
  with offset 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeloop.api import ApiError, label_selector_from_dict
from kubeloop.controllers._scheduler_cache import meta_of

__all__ = [
    "NEVER_POLICY",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "TERMINATING_ON_NOMINATED",
    "Victims",
    "candidate_count",
    "eligible_to_preempt",
    "pick_node",
    "pod_priority",
    "select_victims",
    "split_by_pdb",
    "terminating_by_preemption",
]

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER_POLICY = "not eligible due to preemptionPolicy=Never."
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_NOT_STARTED = "9999-12-31T23:59:59Z"  # GetPodStartTime: a pod not started yet counts as starting now
_MAX_INT32 = 2**31 - 1

Key = tuple[str, str]
Fits = Callable[[frozenset[Key]], list[str]]  # the filters' reasons with those pods removed; [] when it fits


def key_of(pod: Mapping[str, Any]) -> Key:
    meta = meta_of(pod)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def pod_priority(pod: Mapping[str, Any]) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority``, 0 when unset."""
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _start_time(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("startTime") or _NOT_STARTED)


def importance(pod: Mapping[str, Any]) -> tuple[int, str]:
    """Sort key for ``MoreImportantPod``: higher priority first, then the earlier start."""
    return -pod_priority(pod), _start_time(pod)


def terminating_by_preemption(pod: Mapping[str, Any]) -> bool:
    """``podTerminatingByPreemption``: being deleted with DisruptionTarget reason PreemptionByScheduler."""
    if not meta_of(pod).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":  # the first one decides
            return condition.get("status") == "True" and condition.get("reason") == PREEMPTION_BY_SCHEDULER
    return False


def eligible_to_preempt(pod: Mapping[str, Any], nominated_pods: Iterable[Mapping[str, Any]],
                        *, nominated_unresolvable: bool) -> str | None:
    """``PodEligibleToPreemptOthers``: None when eligible, else the reason. ``nominated_pods`` are the
    pods on the pod's nominated node (none when it has no nomination)."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return NEVER_POLICY
    if not (pod.get("status") or {}).get("nominatedNodeName") or nominated_unresolvable:
        return None
    priority = pod_priority(pod)
    if any(pod_priority(p) < priority and terminating_by_preemption(p) for p in nominated_pods):
        return TERMINATING_ON_NOMINATED
    return None


def split_by_pdb(pods: Sequence[Mapping[str, Any]], pdbs: Sequence[Mapping[str, Any]]
                 ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in the given order.

    Each budget allows ``status.disruptionsAllowed`` evictions; every pod it matches (same namespace,
    a non-empty selector, not already in ``status.disruptedPods``) uses one, and a pod for which some
    matching budget goes below zero violates it."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    violating: list[Mapping[str, Any]] = []
    fine: list[Mapping[str, Any]] = []
    for pod in pods:
        labels = meta_of(pod).get("labels") or {}
        violated = False
        if labels:
            for i, pdb in enumerate(pdbs):
                if meta_of(pdb).get("namespace") != meta_of(pod).get("namespace"):
                    continue
                try:
                    selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
                except ApiError:
                    continue  # an invalid selector matches no pod
                if selector.empty or not selector.matches(labels):
                    continue
                if str(meta_of(pod).get("name") or "") in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue  # already counted by the API server's eviction
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods to evict on one node, most important first, and how many violate a budget."""

    pods: tuple[Mapping[str, Any], ...]
    pdb_violations: int


def select_victims(pod: Mapping[str, Any], node_name: str, on_node: Iterable[Mapping[str, Any]],
                   pdbs: Sequence[Mapping[str, Any]], fits: Fits) -> tuple[Victims | None, list[str]]:
    """``SelectVictimsOnNode``: the victims, or None and the node's reasons for the preemption message."""
    priority = pod_priority(pod)
    potential = sorted((p for p in on_node if pod_priority(p) < priority), key=importance)
    if not potential:
        return None, [NO_VICTIMS]
    removed = {key_of(p) for p in potential}
    failures = fits(frozenset(removed))
    if failures:
        return None, failures
    violating, fine = split_by_pdb(potential, pdbs)
    victims: list[Mapping[str, Any]] = []
    violations = 0
    for group, violates in ((violating, 1), (fine, 0)):
        for candidate in group:
            key = key_of(candidate)
            removed.discard(key)
            if not fits(frozenset(removed)):
                continue  # reprieved: the preemptor fits with it still there
            removed.add(key)
            victims.append(candidate)
            violations += violates
    if not victims:
        return None, [f'expected at least one victim pod on node "{node_name}"']
    victims.sort(key=importance)
    return Victims(tuple(victims), violations), []


def candidate_count(nodes: int, *, percentage: int = 10, minimum: int = 100) -> int:
    """``calculateNumCandidates``: ``MinCandidateNodesPercentage`` of the nodes, at least
    ``MinCandidateNodesAbsolute``, at most all of them."""
    count = nodes * percentage // 100
    return min(nodes, max(count, minimum))


def _earliest_top_start(victims: Victims) -> str:
    """``GetEarliestPodStartTime``: the earliest start among the victims of the highest priority."""
    top = max(pod_priority(p) for p in victims.pods)
    return min(_start_time(p) for p in victims.pods if pod_priority(p) == top)


def pick_node(candidates: Mapping[str, Victims]) -> str:
    """``pickOneNodeForPreemption`` over ``candidates`` (in the order given); '' for none."""
    remaining = list(candidates)
    criteria: list[Callable[[Victims], Any]] = [
        lambda v: -v.pdb_violations,
        lambda v: -pod_priority(v.pods[0]),
        lambda v: -sum(pod_priority(p) + _MAX_INT32 + 1 for p in v.pods),
        lambda v: -len(v.pods),
        _earliest_top_start,
    ]
    for score in criteria:
        if len(remaining) <= 1:
            break
        best = max(score(candidates[n]) for n in remaining)
        remaining = [n for n in remaining if score(candidates[n]) == best]
    return remaining[0] if remaining else ""


def disruption_condition(victim: Mapping[str, Any], scheduler_name: str, now: str) -> dict[str, Any] | None:
    """The ``DisruptionTarget`` condition to merge into the victim's status (True, reason
    PreemptionByScheduler), or None when it already says so (``apipod.UpdatePodCondition``: the
    transition time moves only when the status does)."""
    wanted = {"type": "DisruptionTarget", "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
              "message": f"{scheduler_name}: preempting to accommodate a higher priority pod"}
    for condition in (victim.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            if all(condition.get(k) == v for k, v in wanted.items()):
                return None
            if condition.get("status") == "True":
                return {**wanted, "lastTransitionTime": condition.get("lastTransitionTime")}
            break
    return {**wanted, "lastProbeTime": None, "lastTransitionTime": now}
