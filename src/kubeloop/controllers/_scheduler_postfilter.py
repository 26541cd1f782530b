"""The scheduler's PostFilter: DefaultPreemption run against the scheduler cache, and nominated pods.

:class:`DefaultPreemption` shares the scheduler's cache (per-node usage and pod counts, the pods'
placements, which pods are held and assumed) and owns the nominator: pending pods with a
``status.nominatedNodeName`` (observed, or set by a preemption here before the write is seen).

- :meth:`~DefaultPreemption.nominated_pods` is what ``addGENominatedPods`` reads: per node, the
  *other* pods nominated there with a priority at least the scheduled pod's, which the filters
  (:class:`._scheduler_filters.PodFilters`) count as placed: their requests and the pod count, and the
  pods themselves for PodTopologySpread and InterPodAffinity.
- :meth:`~DefaultPreemption.post_filter` is ``Evaluator.Preempt`` (kube-scheduler 1.32,
  ``pkg/scheduler/framework/preemption/preemption.go``) with the choices of
  :mod:`._scheduler_preemption`: eligibility, then a dry run on every node whose filter failure is
  Unschedulable (``RunFilterPluginsWithNominatedPods`` with pods removed: NodeResourcesFit, then
  PodTopologySpread and InterPodAffinity over the placements minus the removed pods when the pod or
  a placed pod needs them, nominated pods added as in scheduling), then ``prepareCandidate`` on the chosen node: each victim gets the
  ``DisruptionTarget`` condition (status patch), a graceful delete and a Normal ``Preempted`` Event
  (action ``Preempting``, related to the preemptor), and lower-priority pods nominated to that node
  lose their nomination. It returns the condition message and what to do with the pod's
  nomination (``handleSchedulingFailure``): a node to nominate, '' to clear it, None to keep it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from kubeloop.api import Clock, NotFound, format_time
from kubeloop.client import Client
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._scheduler_cache import Held, PlacedPods
from kubeloop.controllers._scheduler_filters import NominatedPod, PodFilters
from kubeloop.controllers._scheduler_fit import fit_error, preemption_might_help
from kubeloop.controllers._scheduler_interpod import NamespaceLabels
from kubeloop.controllers._scheduler_preemption import (
    NOT_HELPFUL,
    Victims,
    candidate_count,
    disruption_condition,
    eligible_to_preempt,
    key_of,
    pick_node,
    pod_priority,
    select_victims,
)
from kubeloop.controllers._scheduler_resources import PODS, pod_requests

__all__ = ["DefaultPreemption"]

log = logging.getLogger("kubeloop.controllers.scheduler")

_Key = tuple[str, str]
Placement = Mapping[_Key, Held]


class DefaultPreemption:
    """Preemption and the nominator over the scheduler's cache (shared, not copied)."""

    def __init__(self, *, client: Client, clock: Clock, events: EventSink, scheduler_name: str,
                 pdbs: Callable[[], list[dict[str, Any]]], placed: PlacedPods,
                 usage: Mapping[str, Mapping[str, float]], counts: Mapping[str, int],
                 held: Placement, assumed: Placement, namespace_labels: NamespaceLabels) -> None:
        self.client = client
        self.clock = clock
        self.events = events
        self.scheduler_name = scheduler_name
        self.pdbs = pdbs
        self.placed = placed
        self.usage = usage
        self.counts = counts
        self.held = held
        self.assumed = assumed
        self.namespace_labels = namespace_labels
        self.nominated: MutableMapping[_Key, tuple[str, int, NominatedPod]] = {}  # pod -> (node, priority, itself)

    # -- the nominator --------------------------------------------------------------------------------

    def observe(self, key: _Key, pod: Mapping[str, Any], pending: bool) -> None:
        node = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        if node and pending:
            self.nominated[key] = (node, pod_priority(pod), NominatedPod(key, pod, pod_requests(pod)))
        else:
            self.nominated.pop(key, None)

    def forget(self, key: _Key) -> None:
        self.nominated.pop(key, None)

    def nominated_pods(self, key: _Key, priority: int) -> dict[str, list[NominatedPod]]:
        """Per node, the other pods nominated there whose priority is at least ``priority``."""
        pods: dict[str, list[NominatedPod]] = {}
        for other, (node, other_priority, nominated) in self.nominated.items():
            if other != key and other_priority >= priority:
                pods.setdefault(node, []).append(nominated)
        return pods

    def usage_with(self, node: str, removed: frozenset[_Key] = frozenset()) -> tuple[dict[str, float], int]:
        """What ``node`` has committed, minus the ``removed`` pods placed there."""
        usage = dict(self.usage.get(node, {}))
        count = self.counts.get(node, 0)
        for key in removed:
            entry = self.held.get(key) or self.assumed.get(key)
            if entry is not None and entry.node == node:
                for name, amount in entry.requests.items():
                    usage[name] = usage.get(name, 0.0) - amount
                count -= 1
        return usage, count

    # -- preemption -----------------------------------------------------------------------------------

    def _fails_without(self, pod: Mapping[str, Any], node: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                       wanted: Mapping[str, float], removed: frozenset[_Key], *, checks_pods: bool) -> list[str]:
        """The filters on ``node`` with ``removed`` gone and nominated pods added: the failing one's reasons."""
        name = str(node["metadata"]["name"])
        usage, count = self.usage_with(name, removed)
        nominated = self.nominated_pods(key_of(pod), pod_priority(pod)).get(name, [])
        placed = self.placed.without(removed) if checks_pods else self.placed  # no copy when no filter reads it
        filters = PodFilters(pod, nodes, placed, self.namespace_labels, wanted=wanted)
        return filters.run(node, usage, count, nominated)

    async def post_filter(self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], reasons: Mapping[str, int],
                          statuses: Mapping[str, list[str]], wanted: Mapping[str, float], *,
                          checks_pods: bool) -> tuple[str, str | None]:
        """Preempt for ``pod`` if it can; (the PodScheduled message, the nomination to write)."""
        fit = fit_error(len(nodes), reasons)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        refusal = eligible_to_preempt(pod, self.placed.on(nominated) if nominated else (),
                                      nominated_unresolvable=bool(statuses.get(nominated))
                                      and not preemption_might_help(statuses[nominated]))
        if refusal is not None:
            return f"{fit} preemption: {refusal}", None
        potential = [n for n in nodes if preemption_might_help(statuses.get(str(n["metadata"]["name"])) or ())]
        pdbs = self.pdbs() if potential else []
        limit = candidate_count(len(potential))
        clean: dict[str, Victims] = {}
        violating: dict[str, Victims] = {}
        outcome: dict[str, int] = {NOT_HELPFUL: len(nodes) - len(potential)}
        for node in potential:  # DryRunPreemption, from offset 0
            name = str(node["metadata"]["name"])
            fits = functools.partial(self._fails_without, pod, node, nodes, wanted, checks_pods=checks_pods)
            victims, failures = select_victims(pod, name, self.placed.on(name), pdbs, fits)
            if victims is not None:
                (violating if victims.pdb_violations else clean)[name] = victims
                if clean and len(clean) + len(violating) >= limit:
                    break
            for reason in failures:
                outcome[reason] = outcome.get(reason, 0) + 1
        best = pick_node({**clean, **violating})
        if not best:  # a FitError of its own; the nomination is cleared
            return f"{fit} preemption: {fit_error(len(nodes), outcome)}", ""
        await self._prepare(pod, best, (clean.get(best) or violating[best]).pods)
        return fit, best

    async def _prepare(self, pod: Mapping[str, Any], node: str, victims: tuple[Mapping[str, Any], ...]) -> None:
        """``prepareCandidate``: mark and delete each victim, record ``Preempted``, nominate the pod, and
        clear the nomination of lower-priority pods nominated to ``node``."""
        key = key_of(pod)
        scheduler = str((pod.get("spec") or {}).get("schedulerName") or self.scheduler_name)
        now = format_time(self.clock.now())
        meta = pod.get("metadata") or {}
        related = {"apiVersion": "v1", "kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                   "uid": meta.get("uid")}
        for victim in victims:
            victim_ns, victim_name = key_of(victim)
            condition = disruption_condition(victim, scheduler, now)
            try:
                if condition is not None:  # a strategic merge: conditions merge by type (util.PatchPodStatus)
                    await self.client.patch(PODS, victim_name, {"status": {"conditions": [condition]}},
                                            namespace=victim_ns, subresource="status", patch_type="strategic")
                await self.client.delete(PODS, victim_name, namespace=victim_ns)
            except NotFound:
                continue
            log.info("%s/%s preempted %s/%s on %s", *key, victim_ns, victim_name, node)
            self.events.emit(victim, "Normal", "Preempted", f"Preempted by pod {meta.get('uid')} on node {node}",
                             api_version="v1", kind="Pod", action="Preempting", related=related)
        priority = pod_priority(pod)
        self.nominated[key] = (node, priority, NominatedPod(key, pod, pod_requests(pod)))
        for other, (other_node, other_priority, _requests) in list(self.nominated.items()):
            if other_node != node or other_priority >= priority:
                continue
            self.nominated.pop(other, None)
            try:
                await self.client.patch(PODS, other[1], {"status": {"nominatedNodeName": None}},
                                        namespace=other[0], subresource="status")
            except NotFound:
                pass
