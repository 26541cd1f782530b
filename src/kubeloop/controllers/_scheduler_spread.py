"""The PodTopologySpread plugin: ``DoNotSchedule`` constraints (Filter) and ``ScheduleAnyway`` ones (Score).

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread`` (``common.go``, ``filtering.go``,
``scoring.go``) as of Kubernetes 1.32, where NodeInclusionPolicyInPodTopologySpread and
MatchLabelKeysInPodTopologySpread are on by default.

A constraint (:func:`spread_constraints`) is read with upstream's defaults: ``minDomains`` 1,
``nodeAffinityPolicy`` Honor (only nodes matching the pod's ``nodeSelector`` and required node
affinity count), ``nodeTaintsPolicy`` Ignore (Honor leaves out nodes with a NoSchedule/NoExecute taint
the pod does not tolerate); ``matchLabelKeys`` adds ``key=value`` for each key the pod's labels carry
to the ``labelSelector``. Pods counted are those placed on the node (bound and assumed), in the
incoming pod's namespace, not being deleted, matching the selector; an empty selector counts none.

:class:`TopologySpread` is the PreFilter state for one pod over all nodes: per constraint, the
matching pods in each domain of the eligible nodes (nodes carrying every constraint's topology key).
:meth:`~TopologySpread.filter` fails a node that lacks a constraint's topology key with ``node(s)
didn't match pod topology spread constraints (missing required label)`` (UnschedulableAndUnresolvable),
and one where ``matching pods in its domain + 1 (if the pod matches itself) - global minimum`` exceeds
``maxSkew`` with ``node(s) didn't match pod topology spread constraints`` (Unschedulable); the global
minimum is 0 while fewer than ``minDomains`` domains exist. Constraints are counted each on its own
(upstream 1.32 keyed counts by topology pair, so two constraints on one key shared counts; later
releases count per constraint, as here).

:func:`spread_scores` is Score and NormalizeScore for ``ScheduleAnyway`` constraints; a pod without
constraints gets the default profile's system defaults (``kubernetes.io/hostname`` maxSkew 3,
``topology.kubernetes.io/zone`` maxSkew 5) with the selector of the Services, ReplicationController,
ReplicaSet or StatefulSet that own or select it (``helper.DefaultSelector``); these defaults affect
scoring only. A node scores ``sum(matching pods in its domain * log(domains + 2) + maxSkew - 1)``,
normalised so that the emptiest node gets 100.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeloop.api import ApiError, LabelRequirement, LabelSelector, label_selector_from_dict
from kubeloop.controllers._scheduler_cache import labels_of, meta_of
from kubeloop.controllers._scheduler_fit import matches_required_node_affinity, tolerates

__all__ = [
    "HOSTNAME",
    "SPREAD_CONSTRAINTS_NOT_MATCH",
    "SPREAD_LABEL_MISSING",
    "ZONE",
    "SpreadConstraint",
    "TopologySpread",
    "default_selector",
    "spread_constraints",
    "spread_scores",
    "system_default_constraints",
]

SPREAD_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_MISSING = SPREAD_CONSTRAINTS_NOT_MATCH + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MAX_NODE_SCORE = 100

# Per node name, the pods of a namespace (not being deleted) a selector matches: PlacedPods.count_matching.
CountMatching = Callable[[LabelSelector, str], Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One constraint with upstream's defaults applied (``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def includes(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
        """``matchNodeInclusionPolicies``: whether ``node`` counts for this constraint."""
        if self.honor_node_affinity and not matches_required_node_affinity(pod, node):
            return False
        if self.honor_node_taints:
            tolerations = (pod.get("spec") or {}).get("tolerations") or []
            for taint in (node.get("spec") or {}).get("taints") or ():
                if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                    return False
        return True


def _with_labels(selector: LabelSelector, labels: Mapping[str, str]) -> LabelSelector:
    """``mergeLabelSetWithSelector``: the label set's requirements, then the selector's (none if nil)."""
    return LabelSelector(LabelSelector.from_labels(labels).requirements + selector.requirements)


def spread_constraints(pod: Mapping[str, Any], action: str,
                       constraints: Iterable[Mapping[str, Any]] | None = None) -> list[SpreadConstraint]:
    """``filterTopologySpreadConstraints``: the pod's constraints (or ``constraints``) whose
    ``whenUnsatisfiable`` is ``action``."""
    result = []
    pod_labels = labels_of(pod)
    raw = (pod.get("spec") or {}).get("topologySpreadConstraints") if constraints is None else constraints
    for c in raw or ():
        if not isinstance(c, Mapping) or c.get("whenUnsatisfiable") != action:
            continue
        try:
            selector = label_selector_from_dict(c.get("labelSelector"))
        except ApiError:
            selector = LabelSelector.nothing()
        keys = {k: pod_labels[k] for k in c.get("matchLabelKeys") or () if isinstance(k, str) and k in pod_labels}
        if keys:
            selector = _with_labels(selector, keys)
        result.append(SpreadConstraint(
            max_skew=int(c.get("maxSkew") or 0), topology_key=str(c.get("topologyKey") or ""), selector=selector,
            min_domains=int(c["minDomains"]) if c.get("minDomains") is not None else 1,
            honor_node_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
            honor_node_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor"))
    return result


def _has_keys(node: Mapping[str, Any], constraints: Sequence[SpreadConstraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``."""
    labels = labels_of(node)
    return all(c.topology_key in labels for c in constraints)


class TopologySpread:
    """PreFilter state and Filter for the pod's ``DoNotSchedule`` constraints."""

    def __init__(self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], count: CountMatching) -> None:
        self.pod = pod
        self.constraints = spread_constraints(pod, "DoNotSchedule")
        namespace = str(meta_of(pod).get("namespace") or "")
        self.counts: list[dict[str, int]] = [{} for _ in self.constraints]
        if not self.constraints:
            return
        matching = [count(c.selector, namespace) for c in self.constraints]
        for node in nodes:
            if not _has_keys(node, self.constraints):
                continue
            labels = labels_of(node)
            name = str(meta_of(node).get("name") or "")
            for i, c in enumerate(self.constraints):
                if c.includes(pod, node):
                    value = labels[c.topology_key]
                    self.counts[i][value] = self.counts[i].get(value, 0) + matching[i].get(name, 0)

    @property
    def skipped(self) -> bool:
        return not self.constraints

    def _min_match(self, i: int) -> int:
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            return 0  # fewer eligible domains than minDomains: the global minimum is 0
        return min(counts.values()) if counts else 2**31 - 1

    def filter(self, node: Mapping[str, Any]) -> str | None:
        labels = labels_of(node)
        pod_labels = labels_of(self.pod)
        for i, c in enumerate(self.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return SPREAD_LABEL_MISSING
            self_match = 1 if c.selector.matches(pod_labels) else 0
            if self.counts[i].get(value, 0) + self_match - self._min_match(i) > c.max_skew:
                return SPREAD_CONSTRAINTS_NOT_MATCH
        return None


def system_default_constraints(selector: LabelSelector) -> list[SpreadConstraint]:
    """The default profile's ``defaultingType: System`` constraints (``systemDefaultConstraints``), with
    the pod's default selector; none when that selector is empty (``buildDefaultConstraints``)."""
    if selector.empty:
        return []
    return [SpreadConstraint(max_skew=3, topology_key=HOSTNAME, selector=selector),
            SpreadConstraint(max_skew=5, topology_key=ZONE, selector=selector)]


def spread_scores(pod: Mapping[str, Any], feasible: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                  count: CountMatching, defaults: LabelSelector) -> list[int] | None:
    """PreScore, Score and NormalizeScore for the ``feasible`` nodes; None when the plugin skips (no
    ``ScheduleAnyway`` constraint, and no default one)."""
    has_own = bool((pod.get("spec") or {}).get("topologySpreadConstraints"))
    constraints = (spread_constraints(pod, "ScheduleAnyway") if has_own
                   else system_default_constraints(defaults))
    if not constraints or not feasible:
        return None
    # Nodes without every topology key are ignored only for the pod's own constraints: system defaults
    # let nodes without a zone label still take part in hostname spreading.
    require_all = has_own
    namespace = str(meta_of(pod).get("namespace") or "")
    ignored = {i for i, node in enumerate(feasible) if require_all and not _has_keys(node, constraints)}
    domains: list[dict[str, int]] = [{} for _ in constraints]  # per constraint: domain -> matching pods
    for i, node in enumerate(feasible):
        if i in ignored:
            continue
        for j, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                domains[j].setdefault(labels_of(node).get(c.topology_key, ""), 0)
    weights = [math.log((len(feasible) - len(ignored) if c.topology_key == HOSTNAME else len(domains[j])) + 2)
               for j, c in enumerate(constraints)]
    matching = [count(c.selector, namespace) for c in constraints]
    for node in nodes:
        if require_all and not _has_keys(node, constraints):
            continue
        name = str(meta_of(node).get("name") or "")
        for j, c in enumerate(constraints):
            value = labels_of(node).get(c.topology_key, "")
            if c.topology_key != HOSTNAME and value in domains[j] and c.includes(pod, node):
                domains[j][value] += matching[j].get(name, 0)
    raw: list[int | None] = []
    for i, node in enumerate(feasible):
        if i in ignored:
            raw.append(None)
            continue
        labels = labels_of(node)
        score = 0.0
        for j, c in enumerate(constraints):
            domain = labels.get(c.topology_key)
            if domain is None:
                continue
            name = str(meta_of(node).get("name") or "")
            pods = matching[j].get(name, 0) if c.topology_key == HOSTNAME else domains[j].get(domain, 0)
            score += pods * weights[j] + (c.max_skew - 1)
        raw.append(_round_half_away(score))
    valid = [s for s in raw if s is not None]
    low, high = (min(valid), max(valid)) if valid else (0, 0)
    result = []
    for s in raw:
        if s is None:
            result.append(0)
        elif high == 0:
            result.append(MAX_NODE_SCORE)
        else:
            result.append(MAX_NODE_SCORE * (high + low - s) // high)
    return result


def _round_half_away(value: float) -> int:
    """Go's ``math.Round`` of a score, never negative: halves up (Python's round() goes to even)."""
    return math.floor(value + 0.5)


def default_selector(labels: Mapping[str, str], selectors: Iterable[LabelSelector]) -> LabelSelector:
    """``helper.DefaultSelector``'s result: Services' selector labels merged, then the owning
    controller's selector requirements."""
    requirements: tuple[LabelRequirement, ...] = LabelSelector.from_labels(labels).requirements
    for selector in selectors:
        requirements += selector.requirements
    return LabelSelector(requirements)
