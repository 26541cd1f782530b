"""The InterPodAffinity plugin: required pod affinity and anti-affinity (Filter) and the preferred terms (Score).

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity`` (``filtering.go``, ``scoring.go``) and the
``AffinityTerm`` of ``pkg/scheduler/framework/types.go``, as of Kubernetes 1.32.

:func:`pod_affinity_terms` reads one kind of term (``podAffinity`` or ``podAntiAffinity``, required or
preferred) of a pod as :class:`AffinityTerm`: the namespaces it names (the pod's own when neither
``namespaces`` nor ``namespaceSelector`` is set), its ``namespaceSelector`` (nil matches nothing, ``{}``
every namespace), its ``labelSelector`` (nil matches nothing) and its ``topologyKey``.
``matchLabelKeys`` / ``mismatchLabelKeys`` (MatchLabelKeysInPodAffinity) are not read here: the API
server merged them into the stored ``labelSelector`` when the pod was created (``mutatePodAffinity``),
and upstream's scheduler uses that selector as it is (kubernetes/kubernetes#129480). A term whose
selector does not parse matches nothing.

:class:`InterPodAffinity` is the plugin's PreFilter state for one pod against the pods placed on each
node (bound and assumed: the scheduler cache), and its :meth:`~InterPodAffinity.filter` gives the
node's failure, if any, in upstream's words:

- ``node(s) didn't match pod affinity rules`` (UnschedulableAndUnresolvable): the node lacks a
  term's topology label, or some term's domain holds no pod matching all the terms, unless no pod in
  the cluster matches them and the pod matches all its own terms (the first pod of a group);
- ``node(s) didn't match pod anti-affinity rules`` (Unschedulable): a required anti-affinity term's
  domain holds a matching pod;
- ``node(s) didn't satisfy existing pods anti-affinity rules`` (Unschedulable): a pod placed in one of
  the node's domains has a required anti-affinity term the incoming pod matches (symmetry).

:meth:`~InterPodAffinity.scores` is the plugin's Score and NormalizeScore: per topology domain, the
weights of the incoming pod's preferred affinity terms (minus its preferred anti-affinity terms) that
placed pods match, plus ``hardPodAffinityWeight`` (1) for each placed pod's required affinity term and
the weight of its preferred terms (minus anti-affinity) that the incoming pod matches; a node scores
the sum over its domains, scaled to 0-100 between the lowest and the highest node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeloop.api import ApiError, LabelSelector, label_selector_from_dict
from kubeloop.controllers._scheduler_cache import PlacedPods, labels_of, meta_of

__all__ = [
    "AFFINITY_RULES_NOT_MATCH",
    "ANTI_AFFINITY_RULES_NOT_MATCH",
    "EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "AffinityTerm",
    "InterPodAffinity",
    "NamespaceLabels",
    "pod_affinity_terms",
]

AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs.hardPodAffinityWeight's default
MAX_NODE_SCORE = 100

NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]  # a namespace's labels, None if it does not exist
_Pair = tuple[str, str]


def _selector(raw: Any) -> LabelSelector:
    if raw is not None and not isinstance(raw, Mapping):
        return LabelSelector.nothing()
    try:
        return label_selector_from_dict(raw)
    except ApiError:
        return LabelSelector.nothing()


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One pod (anti-)affinity term of a pod, ready to match other pods (framework ``AffinityTerm``)."""

    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    selector: LabelSelector
    topology_key: str
    weight: int = 0

    def matches(self, pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None) -> bool:
        """``AffinityTerm.Matches``: ``pod`` is in one of the term's namespaces and has matching labels.

        ``namespace_labels`` are the labels of ``pod``'s namespace, None when it does not exist: then
        only an empty ``namespaceSelector`` (every namespace) admits it, as upstream's PreFilter, which
        lists the namespaces a selector matches, does."""
        namespace = str(meta_of(pod).get("namespace") or "")
        admitted = (namespace in self.namespaces or self.namespace_selector.empty
                    or (namespace_labels is not None and self.namespace_selector.matches(namespace_labels)))
        return admitted and self.selector.matches(labels_of(pod))


def _term(pod: Mapping[str, Any], term: Mapping[str, Any], weight: int) -> AffinityTerm:
    namespaces = [str(n) for n in term.get("namespaces") or () if n]
    raw_namespace_selector = term.get("namespaceSelector")
    if not namespaces and raw_namespace_selector is None:
        namespaces = [str(meta_of(pod).get("namespace") or "")]
    return AffinityTerm(frozenset(namespaces), _selector(raw_namespace_selector),
                        _selector(term.get("labelSelector")), str(term.get("topologyKey") or ""),
                        weight)


def pod_affinity_terms(pod: Mapping[str, Any], kind: str, *, preferred: bool = False) -> tuple[AffinityTerm, ...]:
    """The pod's ``kind`` (``podAffinity`` or ``podAntiAffinity``) terms, required or ``preferred``."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    if not isinstance(affinity, Mapping):
        return ()
    if not preferred:
        return tuple(_term(pod, t, 0) for t in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
                     if isinstance(t, Mapping))
    terms = []
    for weighted in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        term = weighted.get("podAffinityTerm") if isinstance(weighted, Mapping) else None
        if isinstance(term, Mapping):
            terms.append(_term(pod, term, int(weighted.get("weight") or 0)))
    return tuple(terms)


def _matches_all(terms: Sequence[AffinityTerm], pod: Mapping[str, Any], namespace_labels: NamespaceLabels) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    labels = namespace_labels(str(meta_of(pod).get("namespace") or ""))
    return bool(terms) and all(t.matches(pod, labels) for t in terms)


def _count(counts: dict[_Pair, int], node: Mapping[str, Any], key: str, delta: int = 1) -> None:
    value = labels_of(node).get(key)
    if value is not None:
        counts[(key, value)] = counts.get((key, value), 0) + delta


class InterPodAffinity:
    """The plugin's state for scheduling ``pod`` over ``nodes``, with the pods placed on them."""

    def __init__(self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], placed: PlacedPods,
                 namespace_labels: NamespaceLabels) -> None:
        self.pod = pod
        self.nodes = {str(meta_of(node).get("name") or ""): node for node in nodes}
        self.placed = placed
        self.namespace_labels = namespace_labels
        self.affinity = pod_affinity_terms(pod, "podAffinity")
        self.anti_affinity = pod_affinity_terms(pod, "podAntiAffinity")
        own_namespace = str(meta_of(pod).get("namespace") or "")
        own_labels = namespace_labels(own_namespace)
        self.affinity_counts: dict[_Pair, int] = {}
        self.anti_affinity_counts: dict[_Pair, int] = {}
        self.existing_anti_affinity_counts: dict[_Pair, int] = {}
        for node, pods in self._placed(with_affinity_only=True):
            for other in pods:
                # getExistingAntiAffinityCounts: placed pods' required anti-affinity against this pod,
                # with this pod's namespace labels (nil, which an empty selector still admits, when gone).
                for term in pod_affinity_terms(other, "podAntiAffinity"):
                    if term.matches(pod, own_labels or {}):
                        _count(self.existing_anti_affinity_counts, node, term.topology_key)
        if not self.affinity and not self.anti_affinity:
            return
        for node, pods in self._placed(with_affinity_only=False):
            for other in pods:
                # getIncomingAffinityAntiAffinityCounts: this pod's terms against the placed pods.
                other_labels = namespace_labels(str(meta_of(other).get("namespace") or ""))
                if self.affinity and all(t.matches(other, other_labels) for t in self.affinity):
                    for term in self.affinity:
                        _count(self.affinity_counts, node, term.topology_key)
                for term in self.anti_affinity:
                    if term.matches(other, other_labels):
                        _count(self.anti_affinity_counts, node, term.topology_key)

    def _placed(self, *, with_affinity_only: bool) -> Iterator[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]:
        """Each known node with its pods (only those with pod affinity or anti-affinity, if asked)."""
        if with_affinity_only:
            for name, pods in self.placed.with_affinity():
                node = self.nodes.get(name)
                if node is not None:
                    yield node, pods
            return
        for name, node in self.nodes.items():
            yield node, self.placed.on(name)

    @property
    def skipped(self) -> bool:
        """PreFilter's Skip: no required terms and no placed pod's anti-affinity to respect."""
        return not self.affinity and not self.anti_affinity and not self.existing_anti_affinity_counts

    def filter(self, node: Mapping[str, Any]) -> str | None:
        """Filter: the reason ``node`` fails the pod's required (anti-)affinity, or None."""
        labels = labels_of(node)
        if not self._satisfies_affinity(labels):
            return AFFINITY_RULES_NOT_MATCH
        if self.anti_affinity_counts:
            for term in self.anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and self.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
                    return ANTI_AFFINITY_RULES_NOT_MATCH
        if self.existing_anti_affinity_counts and any(
                self.existing_anti_affinity_counts.get(pair, 0) > 0 for pair in labels.items()):
            return EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        return None

    def _satisfies_affinity(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        for term in self.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every term's topology label must be on the node
            if self.affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a group with affinity to itself: nothing matches yet, so it may go anywhere
        # that has the topology labels, provided it matches its own terms.
        return not self.affinity_counts and _matches_all(self.affinity, self.pod, self.namespace_labels)

    def scores(self, nodes: Sequence[Mapping[str, Any]]) -> list[int]:
        """PreScore, Score and NormalizeScore for the feasible ``nodes``: 0-100 each (0 when nothing counts)."""
        preferred = pod_affinity_terms(self.pod, "podAffinity", preferred=True)
        preferred_anti = pod_affinity_terms(self.pod, "podAntiAffinity", preferred=True)
        own_labels = self.namespace_labels(str(meta_of(self.pod).get("namespace") or ""))
        topology: dict[_Pair, int] = {}

        def process(terms: Iterable[AffinityTerm], target: Mapping[str, Any], namespace_labels: Mapping[str, str] | None,
                    node: Mapping[str, Any], sign: int, weight: int | None = None) -> None:
            for term in terms:
                if term.matches(target, namespace_labels):
                    _count(topology, node, term.topology_key, sign * (term.weight if weight is None else weight))

        for node, pods in self._placed(with_affinity_only=not (preferred or preferred_anti)):
            if not labels_of(node):
                continue
            for other in pods:
                if preferred or preferred_anti:
                    other_labels = self.namespace_labels(str(meta_of(other).get("namespace") or ""))
                    process(preferred, other, other_labels, node, 1)
                    process(preferred_anti, other, other_labels, node, -1)
                process(pod_affinity_terms(other, "podAffinity"), self.pod, own_labels or {}, node, 1,
                        HARD_POD_AFFINITY_WEIGHT)
                process(pod_affinity_terms(other, "podAffinity", preferred=True), self.pod, own_labels or {}, node, 1)
                process(pod_affinity_terms(other, "podAntiAffinity", preferred=True), self.pod, own_labels or {},
                        node, -1)
        if not topology:
            return [0] * len(nodes)
        raw = [sum(topology.get(pair, 0) for pair in labels_of(node).items()) for node in nodes]
        low, high = min(raw), max(raw)
        if high == low:
            return [0] * len(nodes)
        # float64(MaxNodeScore) * (float64(score-min) / float64(max-min)), the ratio first as upstream does,
        # so truncation matches: 100 * (29 / 100) is 28.999..., 28, where (100 * 29) / 100 would give 29.
        return [int(MAX_NODE_SCORE * ((score - low) / (high - low))) for score in raw]
