"""Node scores: the default profile's score plugins combined with their weights.

:class:`NodeScorer` picks the node for a pod among the feasible ones: each plugin's score, normalised to
0-100 as upstream's NormalizeScore does, times its weight in the default profile (``pkg/scheduler/apis/
config/v1/default_plugins.go``): TaintToleration 3 (:func:`._scheduler_fit.taint_toleration_score`),
NodeAffinity 2 (preferred terms, ``DefaultNormalizeScore``), PodTopologySpread 2
(:func:`._scheduler_spread.spread_scores`), InterPodAffinity 2 (:meth:`._scheduler_interpod.InterPodAffinity.scores`)
and NodeResourcesFit's LeastAllocated 1 (cpu and memory, equally weighted). The highest total wins; ties
go to the node with fewer pods, then the first name (upstream picks among ties at random; kubeloop stays
deterministic). A plugin that skips adds nothing.

The System default spreading constraints need the pod's default selector (``helper.DefaultSelector``):
the selectors of the Services in its namespace that select it, merged, plus the selector of the
ReplicaSet or StatefulSet controlling it. The scorer reads those from shared informers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeloop.api import ApiError, LabelSelector, label_selector_from_dict
from kubeloop.controllers._scheduler_cache import PlacedPods
from kubeloop.controllers._scheduler_fit import preferred_affinity_score, taint_toleration_score
from kubeloop.controllers._scheduler_interpod import InterPodAffinity
from kubeloop.controllers._scheduler_resources import builtin, parse_quantity
from kubeloop.controllers._scheduler_spread import default_selector, spread_scores
from kubeloop.runtime import Manager

__all__ = ["NodeScorer"]

SERVICES = builtin("", "services")
REPLICASETS = builtin("apps", "replicasets")
STATEFULSETS = builtin("apps", "statefulsets")
_OWNER_KINDS = {("apps/v1", "ReplicaSet"): REPLICASETS, ("apps/v1", "StatefulSet"): STATEFULSETS}


class NodeScorer:
    """Scores feasible nodes; ``usage`` and ``counts`` are the scheduler cache's live tables."""

    def __init__(self, manager: Manager, placed: PlacedPods, *, usage: Mapping[str, Mapping[str, float]],
                 counts: Mapping[str, int]) -> None:
        self.placed = placed
        self.usage = usage
        self.counts = counts
        self.services = manager.informer(SERVICES)
        self.owners = {resource: manager.informer(resource) for resource in (REPLICASETS, STATEFULSETS)}

    def default_selector(self, pod: Mapping[str, Any]) -> LabelSelector:
        """``helper.DefaultSelector``: the selectors of the Services that select the pod, and of the
        ReplicaSet or StatefulSet that controls it (ReplicationControllers are not served here)."""
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
            resource = _OWNER_KINDS.get((ref.get("apiVersion"), ref.get("kind"))) if ref.get("controller") else None
            owner = self.owners[resource].cache.get_by_name(str(ref.get("name")), namespace) if resource else None
            if owner is not None:
                try:
                    owners.append(label_selector_from_dict((owner.get("spec") or {}).get("selector")))
                except ApiError:
                    pass
        return default_selector(merged, owners)

    def best(self, pod: Mapping[str, Any], feasible: list[Mapping[str, Any]], wanted: Mapping[str, float],
              nodes: Sequence[Mapping[str, Any]], interpod: InterPodAffinity) -> str:
        """The feasible node with the highest score, each plugin's 0-100 score times its weight in the
        default profile: TaintToleration (3), NodeAffinity's preferred terms (2), PodTopologySpread (2),
        InterPodAffinity (2) and LeastAllocated (1); ties go to the node with fewer pods, then the first
        name. A plugin that skips (no preferences) adds nothing."""
        affinity = [preferred_affinity_score(pod, node) for node in feasible]
        top = max(affinity)
        taints = taint_toleration_score(pod, feasible)
        spread = spread_scores(pod, feasible, nodes, self.placed.count_matching, self.default_selector(pod))
        pod_affinity = interpod.scores(feasible)
        ranks = []
        for i, (node, raw) in enumerate(zip(feasible, affinity, strict=True)):
            name = str(node["metadata"]["name"])
            normalised = (100 * raw // top) if top > 0 else 0
            total = (3 * taints[i] + 2 * normalised + 2 * (spread[i] if spread else 0) + 2 * pod_affinity[i]
                     + self._least_allocated(node, wanted))
            ranks.append((-total, self.counts.get(name, 0), name))
        return min(ranks)[2]

    def _least_allocated(self, node: Mapping[str, Any], wanted: Mapping[str, float]) -> float:
        """LeastAllocated: the mean free share of cpu and memory once the pod is placed, 0-100."""
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        usage = self.usage.get(str(node["metadata"]["name"]), {})
        fractions = []
        for name in ("cpu", "memory"):
            capacity = parse_quantity(allocatable.get(name, 0))
            if capacity > 0:
                fractions.append((usage.get(name, 0.0) + wanted.get(name, 0.0)) / capacity)
        return 100.0 * (1.0 - sum(fractions) / len(fractions)) if fractions else 100.0
