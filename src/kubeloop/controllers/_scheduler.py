"""The scheduler: binds pending pods to nodes that fit, or says why none does.

:class:`Scheduler` reconciles pods that have no ``spec.nodeName``, are not being deleted, ask for
``default-scheduler`` and have no scheduling gates. For each it runs the default profile's filters over
every node, in its order: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit
(:mod:`._scheduler_fit`), VolumeBinding (:mod:`._scheduler_volumes`), PodTopologySpread
(:mod:`._scheduler_spread`) and InterPodAffinity (:mod:`._scheduler_interpod`), with the pods nominated
to the node counted as upstream does (:mod:`._scheduler_filters`); a node reports the first filter it
fails. It scores the fitting ones as upstream, in integers, with the default profile's plugins and
weights, and picks at random among the best from its seeded random source (:mod:`._scheduler_score`). It binds
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
binding, PreBind runs first (:mod:`._scheduler_prebind`): matched volumes are pre-bound to their claims
(``claimRef``), the other claims get ``volume.kubernetes.io/selected-node`` (the volume controller then
provisions), and the
pod, held on that node meanwhile, is bound once every claim is Bound; after ``bind_timeout``
(600 s, the plugin's ``bindTimeoutSeconds``) without that, the node is given up, the pod gets
``PodScheduled`` False ``SchedulerError`` "running PreBind plugin "VolumeBinding": binding volumes:
context deadline exceeded" (and that FailedScheduling Event) and is scheduled afresh a second later.

A pod that fits nowhere gets ``PodScheduled`` False, reason ``Unschedulable``, with upstream's
message (written only when it changes): the filters' reasons, then DefaultPreemption's result
(:mod:`._scheduler_preemption`): unless its ``preemptionPolicy`` is ``Never`` (or a victim it preempted
still terminates on its nominated node), lower-priority pods on the nodes whose failure is resolvable
are dry-run removed, victims chosen per node and a node picked as upstream; the victims get
``DisruptionTarget`` and a graceful delete, the pod ``status.nominatedNodeName`` and the filters'
message alone. Otherwise the message ends with ``preemption:`` and why (``0/N nodes are available:
... No preemption victims found for incoming pod`` / ``Preemption is not helpful for scheduling`` /
a filter's reason per node, or the eligibility sentence). A nominated pod's requests count on its
node for pods of lower or equal priority (``addNominatedPods``), and it goes to that node when it
fits there (it counts for every filter, not only resources). Pending pods are handed out by priority, then arrival (the controller's queue ``order``:
upstream's activeQ); an update of a pending pod that changes only its status does not requeue it
(``isPodUpdated``; these predicates live in :mod:`._scheduler_queue`). It is tried again when nodes change, capacity is freed (a bound pod deleted or
finished), or, for a pod with pod affinity or spread constraints, when a pod is first seen bound or
relabelled; and otherwise every ``unschedulable_retry`` seconds (5 minutes,
``podMaxInUnschedulablePodsDuration``).

Events, from component ``<scheduler name>`` (``default-scheduler``): ``Scheduled`` "Successfully
assigned ns/pod to node" after a binding, Warning ``FailedScheduling`` with the unschedulable message
when the ``PodScheduled`` condition is written. Upstream records a ``FailedScheduling`` on every
attempt (folded into ``count``); here it is recorded when the message changes, so a pod that stays
unschedulable for the same reason costs no writes while it waits.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any

from kubeloop.api import (
    Conflict,
    NotFound,
    copy_json,
    format_time,
)
from kubeloop.controllers._events import EventSink, Severity
from kubeloop.controllers._scheduler_allocation import Allocation, pod_allocation
from kubeloop.controllers._scheduler_cache import Held, PlacedPods
from kubeloop.controllers._scheduler_filters import PodFilters
from kubeloop.controllers._scheduler_postfilter import DefaultPreemption
from kubeloop.controllers._scheduler_prebind import prebind
from kubeloop.controllers._scheduler_preemption import eligible_to_preempt, pod_priority
from kubeloop.controllers._scheduler_queue import (
    committed,
    key_of,
    node_changed,
    pod_updated,
    waits_for_other_pods,
    wants_scheduling,
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
from kubeloop.controllers._scheduler_volumes import Bindings, claims_unusable, find_pod_volumes, pod_volumes
from kubeloop.runtime import Builder, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["Scheduler"]

log = logging.getLogger("kubeloop.controllers.scheduler")

_Key = tuple[str, str]

NAMESPACES = builtin("", "namespaces")


class Scheduler:
    """Binds pods to nodes. Build it on a manager before it runs."""

    def __init__(self, manager: Manager, *, scheduler_name: str = "default-scheduler",
                 unschedulable_retry: float = 300.0, bind_timeout: float = 600.0,
                 rng: random.Random | None = None) -> None:
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
        self._held: dict[_Key, Held] = {}  # observed: pod -> where it counts, and what
        self._assumed: dict[_Key, Held] = {}  # bound by us, not yet observed
        self._usage: dict[str, dict[str, float]] = {}
        self._count: dict[str, int] = {}
        self._allocations: dict[str, Allocation] = {}  # per node: what the resource scores add up
        self._pending: set[_Key] = set()
        self.scorer = NodeScorer(manager, self.placed, allocations=self._allocations,
                                 rng=rng if rng is not None else random.Random(manager.rng.random()))
        self.events = EventSink(self.client, component=scheduler_name, clock=self.clock)
        manager.add(self.events, needs_leader_election=False)
        self.preemption = DefaultPreemption(
            client=self.client, clock=self.clock, events=self.events, scheduler_name=scheduler_name,
            pdbs=self.pdbs.cache.list, placed=self.placed, usage=self._usage, counts=self._count, held=self._held,
            assumed=self._assumed, namespace_labels=self._namespace_labels)
        self.controller = (
            Builder(manager).named("kubeloop-scheduler").for_(PODS, self._pod_event)
            .watches(NODES, EnqueueMapped(lambda _node: self._waiting()), node_changed)
            .watches(PVCS, EnqueueMapped(self._waiting_in_namespace))
            .watches(PVS, EnqueueMapped(lambda _pv: self._waiting())).build(self)
        )
        # activeQ order (PrioritySort's QueueSort): higher spec.priority first, then arrival.
        self.controller.queue.order = self._queue_order
        self.pods.add_handler(self._observe, lambda old, new: self._observe(new), self._forget)

    # -- the scheduler cache ------------------------------------------------------------------------

    def _add(self, entry: Held, sign: int) -> None:
        node = entry.node
        usage = self._usage.setdefault(node, {})
        self._allocations[node] = self._allocations.get(node, Allocation()) + entry.allocation.scaled(sign)
        for name, amount in entry.requests.items():
            usage[name] = usage.get(name, 0.0) + sign * amount
        self._count[node] = self._count.get(node, 0) + sign

    def _observe(self, pod: dict[str, Any]) -> None:
        key = key_of(pod)
        node = committed(pod)
        previous = self._held.pop(key, None)
        if previous is not None:
            self._add(previous, -1)
        arrived = False
        if node:
            assumed = self._assumed.pop(key, None)
            if assumed is not None:
                self._add(assumed, -1)
            requests = pod_requests(pod)
            held = Held(node, requests, pod_allocation(pod))
            self._held[key] = held
            self._add(held, +1)
            old = self.placed.get(key)
            self.placed.place(key, node, pod)
            # Seen bound for the first time (an assumed pod included: upstream's Pod/Add comes from the
            # informer too), moved, or relabelled.
            arrived = previous is None or previous.node != node or old is None or (
                (old.get("metadata") or {}).get("labels") != (pod.get("metadata") or {}).get("labels"))
        elif key not in self._assumed:
            self.placed.remove(key)
        self.preemption.observe(key, pod, wants_scheduling(pod, self.scheduler_name))
        if wants_scheduling(pod, self.scheduler_name):
            self._pending.add(key)
            if waits_for_other_pods(pod):
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
        key = key_of(pod)
        self._pending.discard(key)
        self._spread_waiting.discard(key)
        self.placed.remove(key)
        self._prebound.pop(key, None)
        self.preemption.forget(key)
        for table in (self._held, self._assumed):
            entry = table.pop(key, None)
            if entry is not None:
                self._add(entry, -1)
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

    def _pod_event(self, event: Event) -> bool:
        if event.type == "update" and event.old_object is not None and not pod_updated(event.old_object, event.object):
            return False  # a status write (ours included) does not requeue a pending pod
        return wants_scheduling(event.object, self.scheduler_name)

    # -- scheduling -----------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        pod = self.pods.cache.get_by_name(request.name, request.namespace)
        key = (request.namespace, request.name)
        if pod is None or not wants_scheduling(pod, self.scheduler_name):
            return None
        if key in self._prebound:
            return await self._finish_prebind(pod, key)
        if key in self._assumed:
            return None
        wanted = pod_requests(pod)
        nodes = sorted(self.nodes.cache.list(), key=lambda n: str(n["metadata"]["name"]))
        unusable = claims_unusable(pod, self.claims.cache, self.classes.cache)
        if unusable is not None:
            message = f"0/{len(nodes)} nodes are available: {unusable}." if nodes else unusable
            # PreFilter failed: every node is UnschedulableAndUnresolvable, so preemption says why it
            # does not run, or that it cannot help (and clears the pod's nomination).
            refusal = eligible_to_preempt(pod, (), nominated_unresolvable=True)
            if nodes:
                message += " preemption: " + (refusal or f"0/{len(nodes)} nodes are available: {len(nodes)} "
                                                         "Preemption is not helpful for scheduling.")
            await self._mark_unschedulable(pod, message, nominate=None if refusal or not nodes else "")
            return Result(requeue_after=self.unschedulable_retry)
        volumes = pod_volumes(pod, self.claims.cache, self.classes.cache, self.volumes.cache)
        # FindMatchingVolume looks at every volume: unbound ones in phase Available (volume_matches_claim)
        # and ones whose claimRef names one of the pod's claims, by name or with its uid (a pre-bind of an
        # earlier attempt whose binding has not completed: reused, not doubled; find_pod_volumes).
        available = self.volumes.cache.list() if volumes.delayed else []
        reasons: dict[str, int] = {}
        statuses: dict[str, list[str]] = {}
        feasible: list[Mapping[str, Any]] = []
        bindings: dict[str, Bindings] = {}

        def volume_check(node: Mapping[str, Any]) -> str | None:
            failure, bindings[str(node["metadata"]["name"])] = find_pod_volumes(volumes, node, available)
            return failure

        filters = PodFilters(pod, nodes, self.placed, self._namespace_labels, wanted=wanted, volume_check=volume_check)
        nominated_pods = self.preemption.nominated_pods(key, pod_priority(pod))
        for node in nodes:
            name = str(node["metadata"]["name"])
            usage, count = self.preemption.usage_with(name)
            failures = filters.run(node, usage, count, nominated_pods.get(name, ()))
            for reason in failures:
                reasons[reason] = reasons.get(reason, 0) + 1
            statuses[name] = failures
            if not failures:
                feasible.append(node)
        if not feasible:
            message, nominate = await self.preemption.post_filter(
                pod, nodes, reasons, statuses, wanted, checks_pods=filters.checks_pods)
            await self._mark_unschedulable(pod, message, nominate=nominate)
            return Result(requeue_after=self.unschedulable_retry)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        # evaluateNominatedNode: a pod whose nominated node passes the filters goes there.
        node_name = nominated if nominated in {n["metadata"]["name"] for n in feasible} else (
            self.scorer.best(pod, feasible, nodes, filters.interpod))
        self.preemption.forget(key)  # assumed: no longer a nominated pod (DeleteNominatedPodIfExists)
        held = Held(node_name, wanted, pod_allocation(pod))
        self._assumed[key] = held
        self._add(held, +1)
        self.placed.place(key, node_name, pod)
        chosen = bindings.get(node_name) or Bindings()
        if chosen.static or chosen.provision:
            try:
                await prebind(self.client, chosen, node_name)
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

    # -- volume binding -------------------------------------------------------------------------------

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

    def _unassume(self, key: _Key) -> None:
        entry = self._assumed.pop(key, None)
        if entry is not None:
            self._add(entry, -1)
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


