"""Which daemon pods a sync deletes and which nodes get a new pod: ``podsShouldBeOnNode`` and ``rollingUpdate``.

Upstream (release 1.32): k/k ``pkg/controller/daemon/daemon_controller.go`` (``podsShouldBeOnNode``,
``getUnscheduledPodsWithoutNode``) and ``pkg/controller/daemon/update.go`` (``rollingUpdate``,
``findUpdatedPodsOnNode``, ``updatedDesiredNodeCounts``). Pure decisions over the node -> daemon pods
map; the controller does the writes (``syncNodes``).

Per node (:func:`plan_node`): a node that should run the daemon and has none gets one; one that may
keep running it has its failed pods deleted (paced by :class:`._daemonset_util.FailedPodBackoff`) and
succeeded ones too; without surge only the oldest running pod stays; with surge the oldest new pod
and the oldest old pod may both stay while the new one is not yet available (an unready old pod goes
at once). A node that may not keep it loses every daemon pod.

:func:`rolling_update` (``RollingUpdate`` strategy, once expectations are met): without ``maxSurge``,
old pods are deleted, unavailable ones first and always, available ones only while fewer than
``maxUnavailable`` daemon pods are unavailable; the manage step then creates their replacements. With
``maxSurge``, a new pod is created beside an old one (at once when the old one is unavailable, else up
to ``maxSurge`` at a time) and the old one is deleted once the new one is available.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api import is_being_deleted, name_of, uid_of
from kubeloop.controllers._daemonset_util import (
    REVISION_LABEL,
    FailedPodBackoff,
    by_creation,
    is_pod_updated,
    should_run,
    surge_count,
    template_generation,
    unavailable_count,
)
from kubeloop.controllers._workload_pods import is_pod_available, is_pod_ready

__all__ = ["NodePlan", "plan_node", "rolling_update", "unscheduled_without_node"]

Obj = Mapping[str, Any]


@dataclass
class NodePlan:
    """What one sync does: nodes to create a pod on, pods to delete, Events, a retry delay."""

    create_on: list[str] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    retry_after: float | None = None

    def retry(self, delay: float) -> None:
        self.retry_after = delay if self.retry_after is None else min(self.retry_after, delay)


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def plan_node(plan: NodePlan, node: Obj, pods: Sequence[Obj] | None, ds: Obj, revision_hash: str, *,
              now: float, backoff: FailedPodBackoff) -> None:
    """``podsShouldBeOnNode`` for one node, added to ``plan``."""
    run, keep = should_run(node, ds)
    node_name = name_of(node)
    if run and pods is None:
        plan.create_on.append(node_name)
        return
    if keep:
        running: list[Obj] = []
        for pod in pods or ():
            if is_being_deleted(pod):
                continue
            where = f"{(pod.get('metadata') or {}).get('namespace')}/{name_of(pod)} on node {node_name}"
            if _phase(pod) == "Failed":
                key = f"{uid_of(ds)}/{((ds.get('status') or {}).get('observedGeneration') or 0)}/{node_name}"
                if backoff.in_backoff(key, now):
                    plan.retry(backoff.delay(key))
                    continue
                backoff.next(key, now)
                plan.events.append(("Warning", "FailedDaemonPod", f"Found failed daemon pod {where}, will try to kill it"))
                plan.delete.append(pod)
            elif _phase(pod) == "Succeeded":
                plan.events.append(("Normal", "SucceededDaemonPod",
                                    f"Found succeeded daemon pod {where}, will try to delete it"))
                plan.delete.append(pod)
            else:
                running.append(pod)
        running.sort(key=by_creation)
        if surge_count(ds, 1) <= 0:
            plan.delete.extend(running[1:])
            return
        if len(running) <= 1:
            if not running and run:
                plan.create_on.append(node_name)
            return
        oldest_new: Obj | None = None
        oldest_old: Obj | None = None
        for pod in running:
            if ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) == revision_hash:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            plan.delete.append(pod)
        if oldest_new is not None and oldest_old is not None:
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready, now):
                plan.delete.append(oldest_old)
        return
    if pods:
        plan.delete.extend(p for p in pods if not is_being_deleted(p))


def unscheduled_without_node(node_names: set[str], node_to_pods: Mapping[str, Sequence[Obj]]) -> list[Obj]:
    """``getUnscheduledPodsWithoutNode``: unbound pods meant for a node that does not exist."""
    return [pod for node, pods in node_to_pods.items() if node not in node_names
            for pod in pods if not (pod.get("spec") or {}).get("nodeName")]


def _updated_on_node(ds: Obj, pods: Sequence[Obj], revision_hash: str) -> tuple[Obj | None, Obj | None, bool]:
    """``findUpdatedPodsOnNode``: (new pod, old pod, at most one of each)."""
    new: Obj | None = None
    old: Obj | None = None
    generation = template_generation(ds)
    for pod in pods:
        if is_being_deleted(pod):
            continue
        if is_pod_updated(pod, revision_hash, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def rolling_update(ds: Obj, nodes: Sequence[Obj], node_to_pods: Mapping[str, Sequence[Obj]], revision_hash: str, *,
                   now: float, find_node: Callable[[str], Obj | None]) -> tuple[list[Obj], list[str]]:
    """``rollingUpdate``: (pods to delete, nodes to create a pod on)."""
    pods_by_node: dict[str, Sequence[Obj]] = dict(node_to_pods)
    desired = 0
    for node in nodes:
        if should_run(node, ds)[0]:
            desired += 1
            pods_by_node.setdefault(name_of(node), ())
    max_unavailable, max_surge = unavailable_count(ds, desired), surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1  # an impossible configuration: accept unavailability, as upstream does
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)

    def available(pod: Obj) -> bool:
        return is_pod_available(pod, min_ready, now)

    if max_surge == 0:
        unavailable = 0
        replacements: list[Obj] = []
        candidates: list[Obj] = []
        for pods in pods_by_node.values():
            new, old, ok = _updated_on_node(ds, pods, revision_hash)
            if not ok or (new is None) == (old is None):
                unavailable += 1  # the manage step creates or prunes here
            elif new is not None:
                unavailable += not available(new)
            elif old is not None:
                if not available(old):
                    replacements.append(old)
                    unavailable += 1
                elif unavailable < max_unavailable:
                    candidates.append(old)
        room = min(max(max_unavailable - unavailable, 0), len(candidates))
        return [*replacements, *candidates[:room]], []

    deletes: list[Obj] = []
    sunset: list[Obj] = []
    allowed_nodes: list[str] = []
    candidate_nodes: list[str] = []
    surging = available_count = 0
    for node_name, pods in pods_by_node.items():
        new, old, ok = _updated_on_node(ds, pods, revision_hash)
        if not ok:
            surging += 1
            continue
        if old is not None:
            available_count += available(old)
        elif new is not None:
            available_count += available(new)
        if old is None:
            continue
        if new is None:
            found = find_node(node_name)
            runs = found is not None and should_run(found, ds)[0]
            if not available(old):
                if not runs:
                    deletes.append(old)
                    continue
                allowed_nodes.append(node_name)
            else:
                if not runs:
                    sunset.append(old)
                    continue
                if surging >= max_surge:
                    continue
                candidate_nodes.append(node_name)
        elif not available(new):
            surging += 1
        else:
            deletes.append(old)
    deletable = min(available_count - desired, len(sunset))
    if deletable > 0:
        deletes.extend(p for p in sunset[:deletable] if not is_being_deleted(p))
    room = min(max(max_surge - surging, 0), len(candidate_nodes))
    return deletes, [*allowed_nodes, *candidate_nodes[:room]]
