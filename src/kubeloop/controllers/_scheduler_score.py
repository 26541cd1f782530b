"""Node scores: the default profile's score plugins, in integers, and the choice among the best.

:class:`NodeScorer` is ``prioritizeNodes`` and ``selectHost`` (``pkg/scheduler/schedule_one.go``,
Kubernetes 1.32). Each score plugin gives every feasible node an int64 score, normalised to 0-100 by
the plugin's own NormalizeScore (``framework.MaxNodeScore``), multiplied by its weight in the default
profile (``pkg/scheduler/apis/config/v1/default_plugins.go``), and the products are summed:

| plugin | weight | module |
| --- | --- | --- |
| TaintToleration (``PreferNoSchedule`` taints) | 3 | :func:`._scheduler_fit.taint_toleration_score` |
| NodeAffinity (preferred terms, ``DefaultNormalizeScore``) | 2 | :func:`._scheduler_fit.preferred_affinity_score` |
| NodeResourcesFit (LeastAllocated, cpu and memory) | 1 | :mod:`._scheduler_allocation` |
| PodTopologySpread | 2 | :func:`._scheduler_spread.spread_scores` |
| InterPodAffinity | 2 | :meth:`._scheduler_interpod.InterPodAffinity.scores` |
| NodeResourcesBalancedAllocation | 1 | :mod:`._scheduler_allocation` |
| ImageLocality | 1 | :mod:`._scheduler_images` |

A plugin whose PreScore skips (NodeAffinity without preferred terms, PodTopologySpread without
constraints) adds nothing. A single feasible node is taken without scoring. Among nodes with the
highest total, one is picked at random with equal chance (``selectHost``'s reservoir sampling), from
the scheduler's injected :class:`random.Random`, so a seeded run picks the same nodes every time.

The System default spreading constraints need the pod's default selector (``helper.DefaultSelector``):
the selectors of the Services in its namespace that select it, merged with the label map of the
ReplicationController controlling it, plus the selector of the ReplicaSet or StatefulSet controlling it.
The scorer reads those from shared informers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from kubeloop.api import ApiError, LabelSelector, label_selector_from_dict
from kubeloop.controllers._scheduler_allocation import (
    MAX_NODE_SCORE,
    Allocation,
    allocatable_of,
    balanced_allocation_score,
    least_allocated_score,
    pod_allocation,
)
from kubeloop.controllers._scheduler_cache import PlacedPods
from kubeloop.controllers._scheduler_fit import preferred_affinity_score, taint_toleration_score
from kubeloop.controllers._scheduler_images import ImageStates, image_locality_scores
from kubeloop.controllers._scheduler_interpod import InterPodAffinity
from kubeloop.controllers._scheduler_resources import SERVICES, builtin
from kubeloop.controllers._scheduler_spread import default_selector, spread_scores
from kubeloop.runtime import Manager

__all__ = ["NodeScorer", "select_host"]

REPLICASETS = builtin("apps", "replicasets")
REPLICATIONCONTROLLERS = builtin("", "replicationcontrollers")
STATEFULSETS = builtin("apps", "statefulsets")
_OWNER_KINDS = {("apps/v1", "ReplicaSet"): REPLICASETS, ("apps/v1", "StatefulSet"): STATEFULSETS}

TAINT_TOLERATION_WEIGHT = 3
NODE_AFFINITY_WEIGHT = 2
NODE_RESOURCES_FIT_WEIGHT = 1
POD_TOPOLOGY_SPREAD_WEIGHT = 2
INTER_POD_AFFINITY_WEIGHT = 2
BALANCED_ALLOCATION_WEIGHT = 1
IMAGE_LOCALITY_WEIGHT = 1


class NodeScorer:
    """Scores feasible nodes; ``allocations`` is the scheduler cache's live table of what the pods
    counted on each node add up to."""

    def __init__(self, manager: Manager, placed: PlacedPods, *, allocations: Mapping[str, Allocation],
                 rng: random.Random) -> None:
        self.placed = placed
        self.allocations = allocations
        self.rng = rng
        self._images: tuple[tuple[tuple[str, str], ...], ImageStates] | None = None
        self.services = manager.informer(SERVICES)
        self.owners = {resource: manager.informer(resource) for resource in (REPLICASETS, STATEFULSETS)}
        self.replication_controllers = manager.informer(REPLICATIONCONTROLLERS)

    def default_selector(self, pod: Mapping[str, Any]) -> LabelSelector:
        """``helper.DefaultSelector``: the selectors of the Services that select the pod, merged with the
        label map of the ReplicationController that controls it, and the selector of the ReplicaSet or
        StatefulSet that controls it."""
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        labels = meta.get("labels") or {}
        merged: dict[str, str] = {}
        for service in self.services.cache.list():
            service_meta = service.get("metadata") or {}
            selector = (service.get("spec") or {}).get("selector") or {}
            if (service_meta.get("namespace") == namespace and selector and isinstance(selector, Mapping)
                    and LabelSelector.from_labels(selector).matches(labels)):
                merged.update(selector)
        owners: list[LabelSelector] = []
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller") and (ref.get("apiVersion"), ref.get("kind")) == ("v1", "ReplicationController"):
                rc = self.replication_controllers.cache.get_by_name(str(ref.get("name")), namespace)
                rc_selector = (rc.get("spec") or {}).get("selector") if rc is not None else None
                if isinstance(rc_selector, Mapping):
                    merged.update(rc_selector)  # labels.Merge(labelSet, rc.Spec.Selector)
                continue
            resource = _OWNER_KINDS.get((ref.get("apiVersion"), ref.get("kind"))) if ref.get("controller") else None
            owner = self.owners[resource].cache.get_by_name(str(ref.get("name")), namespace) if resource else None
            if owner is not None:
                try:
                    owners.append(label_selector_from_dict((owner.get("spec") or {}).get("selector")))
                except ApiError:
                    pass
        return default_selector(merged, owners)

    def best(self, pod: Mapping[str, Any], feasible: list[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
             interpod: InterPodAffinity) -> str:
        """The node ``schedulePod`` picks: the only feasible one, or the best by :meth:`totals`, a tie
        decided by ``selectHost``'s reservoir sampling on the injected random source."""
        if len(feasible) == 1:
            return str(feasible[0]["metadata"]["name"])  # upstream skips scoring for a single node
        return select_host(self.totals(pod, feasible, nodes, interpod), self.rng)

    def totals(self, pod: Mapping[str, Any], feasible: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
               interpod: InterPodAffinity) -> list[tuple[str, int]]:
        """``prioritizeNodes``: per feasible node, the sum over the default profile's score plugins of
        the plugin's normalised 0-100 score times its weight (a plugin that skips adds nothing)."""
        names = [str(node["metadata"]["name"]) for node in feasible]
        allocation = pod_allocation(pod)
        fit, balanced = [], []
        for node, name in zip(feasible, names, strict=True):
            allocatable = allocatable_of(node)
            placed = self.allocations.get(name, Allocation())
            fit.append(least_allocated_score(placed.non_zero + allocation.non_zero, allocatable))
            balanced.append(balanced_allocation_score(placed.requested + allocation.requested, allocatable))
        plugins: list[tuple[int, Sequence[int] | None]] = [
            (TAINT_TOLERATION_WEIGHT, taint_toleration_score(pod, feasible)),
            (NODE_AFFINITY_WEIGHT, _node_affinity(pod, feasible)),
            (NODE_RESOURCES_FIT_WEIGHT, fit),
            (POD_TOPOLOGY_SPREAD_WEIGHT, spread_scores(pod, feasible, nodes, self.placed.count_matching,
                                                        self.default_selector(pod))),
            (INTER_POD_AFFINITY_WEIGHT, interpod.scores(feasible)),
            (BALANCED_ALLOCATION_WEIGHT, balanced),
            (IMAGE_LOCALITY_WEIGHT, image_locality_scores(pod, feasible, self._image_states(nodes))),
        ]
        totals = [0] * len(feasible)
        for weight, scores in plugins:
            if scores is not None:
                for i, score in enumerate(scores):
                    totals[i] += weight * score
        return list(zip(names, totals, strict=True))


    def _image_states(self, nodes: Sequence[Mapping[str, Any]]) -> ImageStates:
        """The image states of ``nodes``, rebuilt only when a node was added, removed or updated."""
        version = tuple((str(n["metadata"].get("name")), str(n["metadata"].get("resourceVersion"))) for n in nodes)
        if self._images is None or self._images[0] != version:
            self._images = (version, ImageStates(nodes))
        return self._images[1]


def _node_affinity(pod: Mapping[str, Any], feasible: Sequence[Mapping[str, Any]]) -> list[int] | None:
    """NodeAffinity's Score and ``DefaultNormalizeScore(100, false)``; None (PreScore's Skip) when the pod
    has no preferred terms."""
    node_affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    if not node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"):
        return None
    raw = [preferred_affinity_score(pod, node) for node in feasible]
    top = max(raw, default=0)
    return [MAX_NODE_SCORE * score // top if top > 0 else 0 for score in raw]


def select_host(totals: Sequence[tuple[str, int]], rng: random.Random) -> str:
    """``selectHost``: the highest total; among equal ones each is picked with equal chance (reservoir
    sampling: the k-th tie replaces the pick with probability 1/k), in node-name order here."""
    ranked = sorted(totals, key=lambda item: (-item[1], item[0]))
    best, top = ranked[0][0], ranked[0][1]
    count = 1
    for name, total in ranked[1:]:
        if total != top:
            break
        count += 1
        if rng.randrange(count) == 0:
            best = name
    return best
