"""The scheduler: binds pending pods to nodes that fit, or says why none does.

:class:`Scheduler` reconciles pods that have no ``spec.nodeName``, are not being deleted, ask for
``default-scheduler`` and have no scheduling gates. For each it runs the default profile's filters over
every node, in its order: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit
(:mod:`._scheduler_fit`), VolumeBinding (:mod:`._scheduler_volumes`), PodTopologySpread
(:mod:`._scheduler_spread`) and InterPodAffinity (:mod:`._scheduler_interpod`); a node reports the
first filter it fails. It scores the fitting ones (:mod:`._scheduler_score`) with the default
profile's weights: TaintToleration (PreferNoSchedule taints, 3), NodeAffinity's preferred terms (2),
PodTopologySpread (``ScheduleAnyway`` constraints, or the System defaults for a pod a Service,
ReplicaSet or StatefulSet selects, 2), InterPodAffinity's preferred terms (2) and LeastAllocated on
cpu and memory (1); ties go to the node with fewer pods, then the first name. ImageLocality and BalancedAllocation are not modelled. It binds
the pod with a v1 ``Binding`` through the ``pods/binding`` subresource, as kube-scheduler does.

Accounting is incremental (the scheduler cache): every pod event updates what each node has
committed (requests of non-terminal pods bound to it) and which pods sit there (:mod:`._scheduler_cache`,
what pod affinity and spreading count), and a pod this scheduler bound counts as *assumed* on its
node until the informer shows it bound, so a lagging cache never overcommits a node, and replicas of an
anti-affine Deployment created in one burst never share a node.

Before any node is tried, the pod's claims must be usable (the VolumeBinding plugin's PreFilter): a
claim that is missing or being deleted, or an unbound claim whose class binds ``Immediate``, keeps
the pod pending with upstream's message; the pod is tried again when one of its claims changes.
Per node, the VolumeBinding filter (:mod:`._scheduler_volumes`) checks bound volumes' node affinity
and finds volumes for unbound ``WaitForFirstConsumer`` claims. When the chosen node needs volume
binding, PreBind runs first: matched volumes are pre-bound to their claims (``claimRef``), the other
claims get ``volume.kubernetes.io/selected-node`` (the volume controller then provisions), and the
pod, held on that node meanwhile, is bound once every claim is Bound; after ``bind_timeout``
(600 s, the plugin's ``bindTimeoutSeconds``) without that, the node is given up, the pod gets
``PodScheduled`` False ``SchedulerError`` "running PreBind plugin "VolumeBinding": binding volumes:
context deadline exceeded" (and that FailedScheduling Event) and is scheduled afresh a second later.

A pod that fits nowhere gets ``PodScheduled`` False, reason ``Unschedulable``, with upstream's
message (written only when it changes): the filters' reasons, then the preemption sentence for each
node (kubeloop's pods share one priority, so preemption never finds a victim: ``No preemption victims
found for incoming pod`` where a filter answered Unschedulable, ``Preemption is not helpful for
scheduling`` where it answered UnschedulableAndUnresolvable). It is tried again when nodes change,
capacity is freed (a bound pod deleted or finished), or, for a pod with pod affinity or spread
constraints, when a pod is first seen bound or relabelled; and otherwise every ``unschedulable_retry``
seconds (5 minutes, ``podMaxInUnschedulablePodsDuration``).

Events, from component ``<scheduler name>`` (``default-scheduler``): ``Scheduled`` "Successfully
assigned ns/pod to node" after a binding, Warning ``FailedScheduling`` with the unschedulable message
when the ``PodScheduled`` condition is written. Upstream records a ``FailedScheduling`` on every
attempt (folded into ``count``); here it is recorded when the message changes, so a pod that stays
unschedulable for the same reason costs no writes while it waits.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubeloop.api import (
    Conflict,
    NotFound,
    copy_json,
    format_time,
)
from kubeloop.controllers._events import EventSink, Severity
from kubeloop.controllers._scheduler_cache import PlacedPods, has_pod_affinity
from kubeloop.controllers._scheduler_fit import fit_error, fit_failures, preemption_might_help
from kubeloop.controllers._scheduler_interpod import InterPodAffinity
from kubeloop.controllers._scheduler_preemption import (
    NOT_HELPFUL,
    Victims,
    candidate_count,
    disruption_condition,
    eligible_to_preempt,
    pick_node,
    pod_priority,
    select_victims,
)
from kubeloop.controllers._scheduler_resources import (
    NODES,
    PDBS,
    PODS,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    builtin,
    pod_requests,
)
from kubeloop.controllers._scheduler_score import NodeScorer
from kubeloop.controllers._scheduler_spread import TopologySpread
from kubeloop.controllers._scheduler_volumes import Bindings, PodVolumes, find_pod_volumes
from kubeloop.controllers._volume import BOUND_BY_CONTROLLER, SELECTED_NODE, is_delayed_binding
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["Scheduler"]

log = logging.getLogger("kubeloop.controllers.scheduler")

_Key = tuple[str, str]

NAMESPACES = builtin("", "namespaces")


def _key(pod: Mapping[str, Any]) -> _Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _committed(pod: Mapping[str, Any]) -> str:
    """The node a pod holds resources on ('' when none: unbound or finished)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return ""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _wants_scheduling(pod: Mapping[str, Any], scheduler_name: str) -> bool:
    spec = pod.get("spec") or {}
    return (not spec.get("nodeName") and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and (spec.get("schedulerName") or "default-scheduler") == scheduler_name
            and not spec.get("schedulingGates")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


class Scheduler:
    """Binds pods to nodes. Build it on a manager before it runs."""

    def __init__(self, manager: Manager, *, scheduler_name: str = "default-scheduler",
                 unschedulable_retry: float = 300.0, bind_timeout: float = 600.0) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.scheduler_name = scheduler_name
        self.unschedulable_retry = unschedulable_retry
        self.bind_timeout = bind_timeout
        self.pods = manager.informer(PODS)
        self.nodes = manager.informer(NODES)
        self.claims = manager.informer(PVCS)
        self.classes = manager.informer(STORAGE_CLASSES)
        self.volumes = manager.informer(PVS)
        self.namespaces = manager.informer(NAMESPACES)
        self.pdbs = manager.informer(PDBS)
        self.placed = PlacedPods()  # pods on each node, held and assumed: what InterPodAffinity and spreading see
        self._spread_waiting: set[_Key] = set()  # pending pods another pod's arrival may let in
        self._prebound: dict[_Key, tuple[str, float]] = {}  # pod -> (node, when PreBind wrote), awaiting claims
        self._held: dict[_Key, tuple[str, dict[str, float]]] = {}  # observed: pod -> (node, requests)
        self._assumed: dict[_Key, tuple[str, dict[str, float]]] = {}  # bound by us, not yet observed
        self._usage: dict[str, dict[str, float]] = {}
        self._count: dict[str, int] = {}
        self._pending: set[_Key] = set()
        self._nominated: dict[_Key, tuple[str, int, dict[str, float]]] = {}  # pod -> (node, priority, requests)
        self.scorer = NodeScorer(manager, self.placed, usage=self._usage, counts=self._count)
        self.events = EventSink(self.client, component=scheduler_name, clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        self.controller = (
            Builder(manager).named("kubeloop-scheduler").for_(PODS, self._pod_event)
            .watches(NODES, EnqueueMapped(lambda _node: self._waiting()), _node_changed)
            .watches(PVCS, EnqueueMapped(self._waiting_in_namespace))
            .watches(PVS, EnqueueMapped(lambda _pv: self._waiting())).build(self)
        )
        # activeQ order (PrioritySort's QueueSort): higher spec.priority first, then arrival.
        self.controller.queue.order = self._queue_order
        self.pods.add_handler(self._observe, lambda old, new: self._observe(new), self._forget)

    # -- the scheduler cache ------------------------------------------------------------------------

    def _add(self, node: str, requests: Mapping[str, float], sign: int) -> None:
        usage = self._usage.setdefault(node, {})
        for name, amount in requests.items():
            usage[name] = usage.get(name, 0.0) + sign * amount
        self._count[node] = self._count.get(node, 0) + sign

    def _observe(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        node = _committed(pod)
        previous = self._held.pop(key, None)
        if previous is not None:
            self._add(previous[0], previous[1], -1)
        arrived = False
        if node:
            assumed = self._assumed.pop(key, None)
            if assumed is not None:
                self._add(assumed[0], assumed[1], -1)
            requests = pod_requests(pod)
            self._held[key] = (node, requests)
            self._add(node, requests, +1)
            old = self.placed.get(key)
            self.placed.place(key, node, pod)
            # Seen bound for the first time (an assumed pod included: upstream's Pod/Add comes from the
            # informer too), moved, or relabelled.
            arrived = previous is None or previous[0] != node or old is None or (
                (old.get("metadata") or {}).get("labels") != (pod.get("metadata") or {}).get("labels"))
        elif key not in self._assumed:
            self.placed.remove(key)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        if nominated and _wants_scheduling(pod, self.scheduler_name):
            self._nominated[key] = (nominated, pod_priority(pod), pod_requests(pod))
        else:
            self._nominated.pop(key, None)
        if _wants_scheduling(pod, self.scheduler_name):
            self._pending.add(key)
            if _waits_for_other_pods(pod):
                self._spread_waiting.add(key)
        else:
            self._pending.discard(key)
            self._spread_waiting.discard(key)
        if previous is not None and not node:
            self._wake_waiting()  # a pod finished: its node has room again
        elif arrived and self._spread_waiting:
            # A pod arrived on a node (or its labels changed): pods with required affinity or spread
            # constraints may now fit (upstream's Pod/Add and Pod/UpdatePodLabel events for them).
            for ns, name in sorted(self._spread_waiting):
                self.controller.enqueue(Request(ns, name))

    def _forget(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        self._pending.discard(key)
        self._spread_waiting.discard(key)
        self.placed.remove(key)
        self._prebound.pop(key, None)
        self._nominated.pop(key, None)
        for table in (self._held, self._assumed):
            entry = table.pop(key, None)
            if entry is not None:
                self._add(entry[0], entry[1], -1)
        self._wake_waiting()

    def _waiting(self) -> list[Request]:
        return [Request(ns, name) for ns, name in sorted(self._pending)]

    def _waiting_in_namespace(self, claim: Mapping[str, Any]) -> list[Request]:
        namespace = str((claim.get("metadata") or {}).get("namespace") or "")
        return [Request(ns, name) for ns, name in sorted(self._pending) if ns == namespace]

    def _wake_waiting(self) -> None:
        if self._pending:
            for request in self._waiting():
                self.controller.enqueue(request)

    def _queue_order(self, request: Request) -> int:
        pod = self.pods.cache.get_by_name(request.name, request.namespace)
        return -pod_priority(pod) if pod is not None else 0

    def _nominated_load(self, key: _Key, priority: int) -> dict[str, tuple[dict[str, float], int]]:
        """``addNominatedPods``: per node, the requests and count of other pods nominated there whose
        priority is at least ``priority``; the filters count them as if they were placed."""
        load: dict[str, tuple[dict[str, float], int]] = {}
        for other, (node, other_priority, requests) in self._nominated.items():
            if other == key or other_priority < priority:
                continue
            total, count = load.get(node, ({}, 0))
            for name, amount in requests.items():
                total[name] = total.get(name, 0.0) + amount
            load[node] = (total, count + 1)
        return load

    def _pod_event(self, event: Event) -> bool:
        if event.type == "update" and event.old_object is not None and not _pod_updated(event.old_object, event.object):
            return False  # a status write (ours included) does not requeue a pending pod
        return _wants_scheduling(event.object, self.scheduler_name)

    # -- scheduling -----------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        pod = self.pods.cache.get_by_name(request.name, request.namespace)
        key = (request.namespace, request.name)
        if pod is None or not _wants_scheduling(pod, self.scheduler_name):
            return None
        if key in self._prebound:
            return await self._finish_prebind(pod, key)
        if key in self._assumed:
            return None
        wanted = pod_requests(pod)
        nodes = sorted(self.nodes.cache.list(), key=lambda n: str(n["metadata"]["name"]))
        unusable = self._claims_unusable(pod)
        if unusable is not None:
            message = f"0/{len(nodes)} nodes are available: {unusable}." if nodes else unusable
            if nodes:
                message += (f" preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not"
                            " helpful for scheduling.")
            await self._mark_unschedulable(pod, message)
            return Result(requeue_after=self.unschedulable_retry)
        volumes = self._pod_volumes(pod)
        # FindMatchingVolume looks at every volume: unbound ones in phase Available (volume_matches_claim)
        # and ones whose claimRef names one of the pod's claims, by name or with its uid (a pre-bind of an
        # earlier attempt whose binding has not completed: reused, not doubled; find_pod_volumes).
        available = self.volumes.cache.list() if volumes.delayed else []
        # The PreFilters of PodTopologySpread and InterPodAffinity, over every node and the pods placed there.
        spread = TopologySpread(pod, nodes, self.placed.count_matching)
        interpod = InterPodAffinity(pod, nodes, self.placed, self._namespace_labels)
        reasons: dict[str, int] = {}
        statuses: dict[str, list[str]] = {}
        feasible: list[Mapping[str, Any]] = []
        bindings: dict[str, Bindings] = {}
        nominated_load = self._nominated_load(key, pod_priority(pod))
        for node in nodes:
            name = str(node["metadata"]["name"])
            usage, count = self._usage_with(name, nominated_load, frozenset())
            failures = fit_failures(pod, node, usage, count, wanted)
            if not failures:
                volume_failure, bindings[name] = find_pod_volumes(volumes, node, available)
                failures = [volume_failure] if volume_failure else []
            # The default profile runs PodTopologySpread, then InterPodAffinity, after VolumeBinding; a node
            # reports the first filter it fails.
            if not failures and not spread.skipped:
                failures = [r for r in (spread.filter(node),) if r]
            if not failures and not interpod.skipped:
                failures = [r for r in (interpod.filter(node),) if r]
            for reason in failures:
                reasons[reason] = reasons.get(reason, 0) + 1
            statuses[name] = failures
            if not failures:
                feasible.append(node)
        if not feasible:
            await self._post_filter(pod, key, nodes, reasons, statuses, wanted,
                                    checks_pods=not (spread.skipped and interpod.skipped))
            return Result(requeue_after=self.unschedulable_retry)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        # evaluateNominatedNode: a pod whose nominated node passes the filters goes there.
        node_name = nominated if nominated in {n["metadata"]["name"] for n in feasible} else (
            self.scorer.best(pod, feasible, wanted, nodes, interpod))
        self._nominated.pop(key, None)  # assumed: no longer a nominated pod (DeleteNominatedPodIfExists)
        self._assumed[key] = (node_name, wanted)
        self._add(node_name, wanted, +1)
        self.placed.place(key, node_name, pod)
        chosen = bindings.get(node_name) or Bindings()
        if chosen.static or chosen.provision:
            try:
                await self._prebind(chosen, node_name)
            except Exception:
                self._unassume(key)  # a claim or volume changed under us: schedule afresh
                raise
            self._prebound[key] = (node_name, self.clock.now())
            return Result(requeue_after=self.bind_timeout)
        return await self._bind(pod, key, node_name)

    async def _bind(self, pod: Mapping[str, Any], key: _Key, node_name: str) -> Result | None:
        namespace, name = key
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": name, "namespace": namespace, "uid": pod["metadata"].get("uid")},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        try:
            await self.client.create(PODS, binding, namespace=namespace, subresource="binding")
        except (Conflict, NotFound):
            self._unassume(key)  # bound by someone else, deleted, or recreated: the informer will tell
            return None
        except Exception:
            self._unassume(key)
            raise
        self._event(pod, "Normal", "Scheduled", f"Successfully assigned {namespace}/{name} to {node_name}")
        return None

    # -- preemption (PostFilter DefaultPreemption, :mod:`._scheduler_preemption`) ---------------------------

    def _usage_with(self, node: str, nominated_load: Mapping[str, tuple[dict[str, float], int]],
                    removed: frozenset[_Key]) -> tuple[dict[str, float], int]:
        """What ``node`` has committed, plus nominated pods, minus the ``removed`` pods placed there."""
        usage = dict(self._usage.get(node, {}))
        count = self._count.get(node, 0)
        extra, extra_count = nominated_load.get(node, ({}, 0))
        for name, amount in extra.items():
            usage[name] = usage.get(name, 0.0) + amount
        count += extra_count
        for key in removed:
            entry = self._held.get(key) or self._assumed.get(key)
            if entry is not None and entry[0] == node:
                for name, amount in entry[1].items():
                    usage[name] = usage.get(name, 0.0) - amount
                count -= 1
        return usage, count

    def _fails_without(self, pod: Mapping[str, Any], node: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                       wanted: Mapping[str, float], removed: frozenset[_Key], *, checks_pods: bool) -> list[str]:
        """``RunFilterPluginsWithNominatedPods`` on ``node`` with ``removed`` gone: the failing filter's reasons."""
        name = str(node["metadata"]["name"])
        usage, count = self._usage_with(name, self._nominated_load(_key(pod), pod_priority(pod)), removed)
        failures = fit_failures(pod, node, usage, count, wanted)
        if failures or not checks_pods:
            return failures
        placed = self.placed.without(removed)
        spread = TopologySpread(pod, nodes, placed.count_matching)
        failure = None if spread.skipped else spread.filter(node)
        if failure is None:
            interpod = InterPodAffinity(pod, nodes, placed, self._namespace_labels)
            failure = None if interpod.skipped else interpod.filter(node)
        return [failure] if failure else []

    async def _post_filter(self, pod: dict[str, Any], key: _Key, nodes: Sequence[Mapping[str, Any]],
                           reasons: Mapping[str, int], statuses: Mapping[str, list[str]],
                           wanted: Mapping[str, float], *, checks_pods: bool) -> None:
        """DefaultPreemption's ``Preempt``, then the pod's condition (``handleSchedulingFailure``)."""
        fit = fit_error(len(nodes), reasons)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        refusal = eligible_to_preempt(pod, self.placed.on(nominated) if nominated else (),
                                      nominated_unresolvable=bool(statuses.get(nominated))
                                      and not preemption_might_help(statuses[nominated]))
        if refusal is not None:  # the nomination is kept
            await self._mark_unschedulable(pod, f"{fit} preemption: {refusal}")
            return
        potential = [n for n in nodes if preemption_might_help(statuses.get(str(n["metadata"]["name"])) or ())]
        pdbs = self.pdbs.cache.list() if potential else []
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
            await self._mark_unschedulable(pod, f"{fit} preemption: {fit_error(len(nodes), outcome)}", nominate="")
            return
        await self._preempt(pod, key, best, (clean.get(best) or violating[best]).pods)
        await self._mark_unschedulable(pod, fit, nominate=best)

    async def _preempt(self, pod: Mapping[str, Any], key: _Key, node: str, victims: tuple[Mapping[str, Any], ...]) -> None:
        """``prepareCandidate``: mark and delete each victim, record ``Preempted``, nominate the pod, and
        clear the nomination of lower-priority pods nominated to ``node``."""
        scheduler = str((pod.get("spec") or {}).get("schedulerName") or self.scheduler_name)
        now = format_time(self.clock.now())
        meta = pod.get("metadata") or {}
        related = {"apiVersion": "v1", "kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                   "uid": meta.get("uid")}
        for victim in victims:
            victim_ns, victim_name = _key(victim)
            conditions = disruption_condition(victim, scheduler, now)
            try:
                if conditions is not None:
                    await self.client.patch(PODS, victim_name, {"status": {"conditions": conditions}},
                                            namespace=victim_ns, subresource="status")
                await self.client.delete(PODS, victim_name, namespace=victim_ns)
            except NotFound:
                continue
            log.info("%s/%s preempted %s/%s on %s", *key, victim_ns, victim_name, node)
            self.events.emit(victim, "Normal", "Preempted", f"Preempted by pod {meta.get('uid')} on node {node}",
                             api_version="v1", kind="Pod", action="Preempting", related=related)
        priority = pod_priority(pod)
        self._nominated[key] = (node, priority, pod_requests(pod))
        for other, (other_node, other_priority, _requests) in list(self._nominated.items()):
            if other_node != node or other_priority >= priority:
                continue
            self._nominated.pop(other, None)
            try:
                await self.client.patch(PODS, other[1], {"status": {"nominatedNodeName": None}},
                                        namespace=other[0], subresource="status")
            except NotFound:
                pass

    # -- volume binding -------------------------------------------------------------------------------

    def _pod_volumes(self, pod: Mapping[str, Any]) -> PodVolumes:
        """The pod's bound claims' volumes and its unbound delayed-binding claims (PreFilter passed)."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        bound: list[dict[str, Any]] = []
        delayed: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            claim = self.claims.cache.get_by_name(str(name), namespace) if name else None
            if claim is None:
                continue
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if volume_name:
                pv = self.volumes.cache.get_by_name(str(volume_name))
                if pv is not None:
                    bound.append(pv)
                continue
            class_name = (claim.get("spec") or {}).get("storageClassName")
            storage_class = self.classes.cache.get_by_name(str(class_name), None) if class_name else None
            if is_delayed_binding(storage_class):
                delayed.append((claim, storage_class))
        return PodVolumes(tuple(bound), tuple(delayed))

    async def _prebind(self, chosen: Bindings, node_name: str) -> None:
        """``BindPodVolumes``' API updates: pre-bind matched volumes, annotate claims to provision."""
        for pv, claim in chosen.static:
            meta = claim["metadata"]
            claim_ref = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"), "name": meta.get("name"),
                         "uid": meta.get("uid"), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}
            annotations = {**(pv["metadata"].get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
            await self.client.update(PVS, {**pv, "metadata": {**pv["metadata"], "annotations": annotations},
                                           "spec": {**pv["spec"], "claimRef": claim_ref}})
        for claim in chosen.provision:
            meta = claim["metadata"]
            if (meta.get("annotations") or {}).get(SELECTED_NODE) == node_name:
                continue
            await self.client.patch(PVCS, str(meta["name"]), {"metadata": {
                "annotations": {SELECTED_NODE: node_name}, "resourceVersion": meta.get("resourceVersion")}},
                namespace=str(meta.get("namespace") or ""))

    async def _finish_prebind(self, pod: Mapping[str, Any], key: _Key) -> Result | None:
        """PreBind's wait: bind the pod once all its claims are Bound; give the node up after the timeout."""
        node_name, since = self._prebound[key]
        namespace = key[0]
        claims = [self.claims.cache.get_by_name(str(v["persistentVolumeClaim"]["claimName"]), namespace)
                  for v in (pod.get("spec") or {}).get("volumes") or ()
                  if (v.get("persistentVolumeClaim") or {}).get("claimName")]
        if all(c is not None and (c.get("spec") or {}).get("volumeName")
               and (c.get("status") or {}).get("phase") == "Bound" for c in claims):
            del self._prebound[key]
            return await self._bind(pod, key, node_name)
        now = self.clock.now()
        if now < since + self.bind_timeout:
            return Result(requeue_after=since + self.bind_timeout - now)
        log.info("volumes of %s/%s not bound on %s after %ss: scheduling again", *key, node_name, self.bind_timeout)
        del self._prebound[key]
        self._unassume(key)
        await self._mark_unschedulable(dict(pod), 'running PreBind plugin "VolumeBinding": binding volumes: context '
                                       "deadline exceeded", reason="SchedulerError")
        return Result(requeue_after=1.0)  # the scheduling queue's initial pod backoff

    def _claims_unusable(self, pod: Mapping[str, Any]) -> str | None:
        """VolumeBinding PreFilter: why the pod's claims keep it off every node, or None."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        unbound_immediate = False
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            source = volume.get("persistentVolumeClaim") or {}
            name = source.get("claimName")
            if not name:
                continue
            claim = self.claims.cache.get_by_name(str(name), namespace)
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return f'persistentvolumeclaim "{name}" is being deleted'
            if (claim.get("spec") or {}).get("volumeName"):
                continue
            class_name = (claim.get("spec") or {}).get("storageClassName")
            storage_class = self.classes.cache.get_by_name(str(class_name), None) if class_name else None
            if storage_class is None or storage_class.get("volumeBindingMode", "Immediate") == "Immediate":
                unbound_immediate = True
        return "pod has unbound immediate PersistentVolumeClaims" if unbound_immediate else None

    def _unassume(self, key: _Key) -> None:
        entry = self._assumed.pop(key, None)
        if entry is not None:
            self._add(entry[0], entry[1], -1)
            if key not in self._held:
                self.placed.remove(key)

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        obj = self.namespaces.cache.get_by_name(namespace, None)
        return None if obj is None else ((obj.get("metadata") or {}).get("labels") or {})

    async def _mark_unschedulable(self, pod: dict[str, Any], message: str, *, reason: str = "Unschedulable",
                                  nominate: str | None = None) -> None:
        """Write ``PodScheduled`` False; ``nominate`` (when not None) sets ``status.nominatedNodeName``,
        '' clears it."""
        status = copy_json(pod.get("status") or {})
        if nominate:
            status["nominatedNodeName"] = nominate
        elif nominate == "":
            status.pop("nominatedNodeName", None)
        conditions = status.setdefault("conditions", [])
        now = format_time(self.clock.now())
        for condition in conditions:
            if condition.get("type") == "PodScheduled":
                if condition.get("status") != "False":
                    condition["lastTransitionTime"] = now
                condition.update(status="False", reason=reason, message=message)
                break
        else:
            conditions.append({"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                               "lastTransitionTime": now, "reason": reason, "message": message})
        if status == pod.get("status"):
            return
        try:
            await self.client.update(PODS, {**pod, "status": status}, namespace=pod["metadata"].get("namespace"),
                                     subresource="status")
        except NotFound:
            return
        self._event(pod, "Warning", "FailedScheduling", message)

    def _event(self, pod: Mapping[str, Any], event_type: Severity, reason: str, message: str) -> None:
        self.events.emit(pod, event_type, reason, message, api_version="v1", kind="Pod")


def _waits_for_other_pods(pod: Mapping[str, Any]) -> bool:
    """A pod whose filters need other pods present: required pod affinity, or spread constraints."""
    spec = pod.get("spec") or {}
    return bool(spec.get("topologySpreadConstraints") or has_pod_affinity(pod))


def _pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The scheduling queue's ``isPodUpdated``: a change beyond status, resourceVersion, generation,
    managedFields and finalizers."""
    def strip(pod: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (pod.get("metadata") or {}).items()
                if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
        return {**{k: v for k, v in pod.items() if k != "status"}, "metadata": meta}
    return strip(old) != strip(new)


def _node_changed(event: Event) -> bool:
    """Node events that can make a waiting pod fit: new nodes, and changes to what the filters read."""
    if event.type != "update" or event.old_object is None:
        return event.type == "create"
    old, new = event.old_object, event.object
    return bool(old.get("spec") != new.get("spec")
                or (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels")
                or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"))
