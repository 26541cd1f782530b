"""The default profile's filters for one pod on one node, with the nominated pods counted.

:class:`PodFilters` is one scheduling attempt's filter state: the PreFilter results of
PodTopologySpread and InterPodAffinity over every node and the pods placed there, and
:meth:`~PodFilters.run`, upstream's ``RunFilterPluginsWithNominatedPods``
(``pkg/scheduler/framework/runtime/framework.go``, Kubernetes 1.32) over one node. The filters run
in the default profile's order and a node reports the first one it fails: NodeUnschedulable,
TaintToleration, NodeAffinity and NodeResourcesFit (:func:`._scheduler_fit.fit_failures`),
VolumeBinding (the scheduler's ``volume_check``, when given), PodTopologySpread
(:class:`._scheduler_spread.TopologySpread`) and InterPodAffinity
(:class:`._scheduler_interpod.InterPodAffinity`).

When pods of equal or higher priority than the incoming one are nominated to the node
(``addGENominatedPods``; never the pod itself), the filters run twice: first with those pods added to
the node, their requests and pod count for NodeResourcesFit and the pods themselves for
PodTopologySpread's and InterPodAffinity's counts (``RunPreFilterExtensionAddPod``; a plugin whose
PreFilter skipped stays skipped); if that passes, again without them, because a filter such as pod
affinity may pass only with them. The node fits when both pass; the reasons are the failing pass's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from kubeloop.controllers._scheduler_cache import PlacedPods
from kubeloop.controllers._scheduler_fit import fit_failures
from kubeloop.controllers._scheduler_interpod import InterPodAffinity, NamespaceLabels
from kubeloop.controllers._scheduler_spread import TopologySpread

__all__ = ["NominatedPod", "PodFilters", "VolumeCheck"]

_Key = tuple[str, str]
VolumeCheck = Callable[[Mapping[str, Any]], "str | None"]  # VolumeBinding's Filter: the node's failure, or None


class NominatedPod(NamedTuple):
    """A pending pod nominated to a node, as the filters add it there."""

    key: _Key
    pod: Mapping[str, Any]
    requests: Mapping[str, float]


class PodFilters:
    """Filter state for scheduling ``pod`` over ``nodes``, with the pods ``placed`` on them."""

    def __init__(self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], placed: PlacedPods,
                 namespace_labels: NamespaceLabels, *, wanted: Mapping[str, float],
                 volume_check: VolumeCheck | None = None) -> None:
        self.pod = pod
        self.nodes = nodes
        self.placed = placed
        self.namespace_labels = namespace_labels
        self.wanted = wanted
        self.volume_check = volume_check
        self.spread = TopologySpread(pod, nodes, placed.count_matching)
        self.interpod = InterPodAffinity(pod, nodes, placed, namespace_labels)

    @property
    def checks_pods(self) -> bool:
        """Whether a filter that counts other pods runs (PodTopologySpread or InterPodAffinity did not skip)."""
        return not (self.spread.skipped and self.interpod.skipped)

    def run(self, node: Mapping[str, Any], usage: Mapping[str, float], count: int,
            nominated: Sequence[NominatedPod] = ()) -> list[str]:
        """``RunFilterPluginsWithNominatedPods``: why ``node`` (with ``usage`` requested by ``count`` pods)
        does not fit, empty when it does; ``nominated`` are the pods nominated there of equal or higher
        priority."""
        if nominated:
            with_nominated = dict(usage)
            for other in nominated:
                for name, amount in other.requests.items():
                    with_nominated[name] = with_nominated.get(name, 0.0) + amount
            failures = self._once(node, with_nominated, count + len(nominated), nominated)
            if failures:
                return failures
        return self._once(node, usage, count, ())

    def _once(self, node: Mapping[str, Any], usage: Mapping[str, float], count: int,
              nominated: Sequence[NominatedPod]) -> list[str]:
        """``RunFilterPlugins``: the first failing filter's reasons."""
        failures = fit_failures(self.pod, node, usage, count, self.wanted)
        if failures:
            return failures
        if self.volume_check is not None:
            failure = self.volume_check(node)
            if failure:
                return [failure]
        spread, interpod = self.spread, self.interpod
        if nominated and self.checks_pods:
            name = str(node["metadata"]["name"])
            placed = self.placed.plus({other.key: (name, other.pod) for other in nominated})
            if not spread.skipped:
                spread = TopologySpread(self.pod, self.nodes, placed.count_matching)
            if not interpod.skipped:
                interpod = InterPodAffinity(self.pod, self.nodes, placed, self.namespace_labels)
        failure = None if spread.skipped else spread.filter(node)
        if failure is None and not interpod.skipped:
            failure = interpod.filter(node)
        return [failure] if failure else []
