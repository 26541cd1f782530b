"""The DaemonSet controller: one daemon pod on every eligible node, rolled out revision by revision.

Upstream: k/k ``pkg/controller/daemon/daemon_controller.go`` (``syncDaemonSet``, ``manage``,
``syncNodes``, ``updateDaemonSetStatus``/``storeDaemonSetStatus``, the pod and node event handlers)
and ``update.go``. One sync of a set (level-based, from the informer caches):

1. Gone: forget its expectations. Being deleted: nothing (history and status cannot be trusted).
2. Claim its pods (selector and controller reference) and its ControllerRevisions; the current
   revision gives the hash new pods are labelled with (:mod:`._daemonset_history`).
3. While expectations of earlier creates/deletes are not met, only the status is written (without
   ``observedGeneration``). Otherwise ``manage``: per node, create or delete daemon pods
   (:func:`._daemonset_rollout.plan_node`), and unbound pods meant for nodes that no longer exist go;
   then, if still satisfied, the ``RollingUpdate`` step (:func:`._daemonset_rollout.rolling_update`;
   ``OnDelete`` waits for the user to delete pods); then old revisions are pruned.
4. ``syncNodes``: expectations raised first, at most ``burst_replicas`` creates (slow-start batches
   1, 2, 4 ...) and deletes; each pod is the template with the daemon tolerations, the
   ``pod-template-generation`` and ``controller-revision-hash`` labels, a controller reference with
   ``blockOwnerDeletion``, and required node affinity ``metadata.name In [node]`` so the scheduler
   binds it to that node.
5. Status from each eligible node's oldest pod: ``desiredNumberScheduled``, ``currentNumberScheduled``,
   ``numberMisscheduled`` (pods on nodes that should not run one), ``numberReady``, ``numberAvailable``
   (``minReadySeconds`` on the injected clock), ``updatedNumberScheduled``, ``numberUnavailable``,
   ``observedGeneration``; written only when something changed. A set with ``minReadySeconds`` whose
   ready pods are not all available yet is looked at again after that long.

Events: ``SuccessfulCreate``/``FailedCreate``/``SuccessfulDelete``/``FailedDelete`` (pod control),
``FailedDaemonPod``/``SucceededDaemonPod``, ``SelectingAll``, from ``daemonset-controller``. Nodes
added, or updated so that a set's verdict changes, sync the sets; a removed node syncs every set, so
``desiredNumberScheduled`` and the other counts drop at once (upstream 1.32 registers no node delete
handler: its sets see the removal at their next sync, at the latest when the pod garbage collector
deletes the node's pods and their delete events sync the sets). Pods bound to a removed node are the
pod garbage collector's (:mod:`._pod_gc`); unbound ones meant for it go here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Unpack

from kubeloop.api import (
    ApiError,
    NotFound,
    controller_of,
    copy_json,
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
)
from kubeloop.client import Client
from kubeloop.controllers import _daemonset_util as du
from kubeloop.controllers._daemonset_history import History
from kubeloop.controllers._daemonset_rollout import (
    NodePlan,
    plan_node,
    rolling_update,
    unscheduled_without_node,
)
from kubeloop.controllers._scheduler_resources import NODES
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.controllers._workload_base import WorkloadController, WorkloadOptions
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    owners_selecting,
    resolve_controller,
)
from kubeloop.controllers._workload_expectations import Expectations, OwnObjectEvents
from kubeloop.controllers._workload_kinds import DAEMONSETS, PODS, REVISIONS, int_field
from kubeloop.controllers._workload_pods import (
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    slow_start_batch,
)
from kubeloop.runtime import (
    EnqueueForOwner,
    Event,
    InformerFactory,
    Request,
    Result,
    SharedInformer,
    Watch,
    object_key,
)

__all__ = ["DaemonSetController"]

Obj = Mapping[str, Any]

BURST_REPLICAS = 250  # kube-controller-manager's daemon set BurstReplicas
STATUS_UPDATE_RETRIES = 1
# Status fields Go writes even at zero; the others are omitempty.
_ALWAYS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
_COUNTS = (*_ALWAYS, "updatedNumberScheduled", "numberAvailable", "numberUnavailable")


class DaemonSetController(WorkloadController):
    """Reconciles DaemonSets; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "daemonset"
    kind = "DaemonSet"
    resource = DAEMONSETS

    def __init__(self, client: Client, informers: InformerFactory, *, burst_replicas: int = BURST_REPLICAS,
                 **options: Unpack[WorkloadOptions]) -> None:  # fmt: skip
        self.burst_replicas = burst_replicas
        super().__init__(client, informers, **options)
        self.expectations = Expectations(self.clock)
        self.backoff = du.FailedPodBackoff()
        self.history = History(client, self.revisions.cache, field_manager=self.field_manager)

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.sets: SharedInformer = informers.informer(DAEMONSETS)
        self.pods: SharedInformer = add_orphan_index(informers.informer(PODS))
        self.nodes: SharedInformer = informers.informer(NODES)
        self.revisions: SharedInformer = add_orphan_index(informers.informer(REVISIONS))
        return [Watch(self.sets, OwnObjectEvents(self)), Watch(self.pods, _PodEvents(self)),
                Watch(self.nodes, _NodeEvents(self)), Watch(self.revisions, EnqueueForOwner(DAEMONSETS))]  # fmt: skip

    # -- reconcile -------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        cached = self.sets.cache.get(key)
        if cached is None:
            self.expectations.delete(key)
            return None
        ds: dict[str, Any] = copy_json(cached)
        if (ds.get("spec") or {}).get("selector") == {}:
            self.event(ds, "Warning", "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
            return None
        if is_being_deleted(ds):
            return None
        nodes = self.nodes.cache.list()
        pods = await self._claim_pods(ds)
        current, old = await self.history.construct(ds, pods)
        revision_hash = labels_of(current).get(du.REVISION_LABEL, "")
        node_to_pods = _by_node(pods)
        if not self.expectations.satisfied(key):
            return await self._update_status(ds, nodes, node_to_pods, revision_hash, observed=False)
        retry_after: float | None = None
        error: BaseException | None = None
        try:
            retry_after = await self._update(key, ds, nodes, node_to_pods, revision_hash, old, pods)
        except (ApiError, OSError) as err:
            error = err
        result = await self._update_status(ds, nodes, node_to_pods, revision_hash, observed=True)
        if error is not None:
            raise error
        if retry_after is not None:
            self.controller.queue.add_after(Request.for_object(ds), retry_after)
        return result

    async def _claim_pods(self, ds: Obj) -> list[Obj]:
        """``getDaemonPods`` without the pods that are terminal and being deleted (``getNodesToDaemonPods``)."""
        selector = label_selector_from_dict((ds.get("spec") or {}).get("selector"))
        claimed = await claim_children(
            self.client, owner=ds, owner_resource=DAEMONSETS, child_resource=PODS,
            children=candidates(self.pods.cache, ds), matches=lambda p: selector.matches(labels_of(p)),
            field_manager=self.field_manager,
        )  # fmt: skip
        return [p for p in claimed if not (_terminal(p) and is_being_deleted(p))]

    async def _update(self, key: str, ds: dict[str, Any], nodes: Sequence[Obj], node_to_pods: dict[str, list[Obj]],
                      revision_hash: str, old: list[dict[str, Any]], pods: Sequence[Obj]) -> float | None:
        """``updateDaemonSet``: manage, then the rolling update once expectations are met, then history."""
        now = self.clock.now()
        plan = NodePlan()
        for node in nodes:
            plan_node(plan, node, node_to_pods.get(name_of(node)), ds, revision_hash, now=now, backoff=self.backoff)
        plan.delete.extend(unscheduled_without_node({name_of(n) for n in nodes}, node_to_pods))
        for event_type, reason, message in plan.events:
            self.event(ds, event_type, reason, message)  # type: ignore[arg-type]
        await self._sync_nodes(key, ds, plan.delete, plan.create_on, revision_hash)
        strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
        if self.expectations.satisfied(key) and strategy == "RollingUpdate":
            by_name = {name_of(n): n for n in nodes}
            deletes, creates = rolling_update(ds, nodes, node_to_pods, revision_hash, now=now, find_node=by_name.get)
            await self._sync_nodes(key, ds, deletes, creates, revision_hash)
        await self.history.cleanup(ds, old, pods)
        return plan.retry_after

    # -- writes ----------------------------------------------------------------------------------

    async def _sync_nodes(self, key: str, ds: Obj, doomed: Sequence[Obj], node_names: Sequence[str],
                          revision_hash: str) -> None:
        """``syncNodes``: expectations first, then slow-start creates and parallel deletes."""
        if not doomed and not node_names:
            return
        creates = list(node_names[: self.burst_replicas])
        deletes = list(doomed[: self.burst_replicas])
        self.expectations.expect(key, len(creates), [object_key(p) for p in deletes])
        ref = owner_reference(ds, controller=True, block_owner_deletion=True)
        pending = iter(creates)

        async def create() -> None:
            node_name = next(pending)
            template = du.pod_template(ds, node_name, revision_hash)
            pod = pod_from_template(template, namespace=namespace_of(ds), generate_name=f"{name_of(ds)}-", owner_ref=ref)
            try:
                made = await self.client.create(PODS, pod, namespace=namespace_of(ds), field_manager=self.field_manager)
            except ApiError as err:
                if not is_namespace_terminating_error(err):  # RealPodControl.createPods: no Event then
                    self.event(ds, "Warning", "FailedCreate", f"Error creating: {err.message or err}")
                raise
            self.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {name_of(made)}")

        errors: list[BaseException] = []
        if creates:
            created, error = await slow_start_batch(len(creates), create)
            for _ in range(len(creates) - created):
                self.expectations.creation_observed(key)  # never to be seen by the informer
            if error is not None and not is_namespace_terminating_error(error):
                errors.append(error)
        results = await asyncio.gather(*(self._delete_pod(ds, p) for p in deletes), return_exceptions=True)
        for victim, outcome in zip(deletes, results, strict=True):
            if isinstance(outcome, BaseException):
                self.expectations.deletion_observed(key, object_key(victim))
                if not isinstance(outcome, NotFound):
                    errors.append(outcome)
        if errors:
            raise errors[0]

    async def _delete_pod(self, ds: Obj, pod: Obj) -> None:
        try:
            await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod))
        except NotFound:
            raise
        except ApiError as err:
            self.event(ds, "Warning", "FailedDelete", f"Error deleting: {err.message or err}")
            raise
        self.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

    # -- status ----------------------------------------------------------------------------------

    def _counts(self, ds: Obj, nodes: Sequence[Obj], node_to_pods: Mapping[str, list[Obj]],
                revision_hash: str) -> dict[str, int]:
        """``updateDaemonSetStatus``'s counts, from each node's oldest daemon pod."""
        counts = dict.fromkeys(_COUNTS, 0)
        min_ready = int_field(ds.get("spec"), "minReadySeconds")
        generation = du.template_generation(ds)
        now = self.clock.now()
        for node in nodes:
            pods = node_to_pods.get(name_of(node)) or []
            if not du.should_run(node, ds)[0]:
                counts["numberMisscheduled"] += bool(pods)
                continue
            counts["desiredNumberScheduled"] += 1
            if not pods:
                continue
            counts["currentNumberScheduled"] += 1
            pod = sorted(pods, key=du.by_creation)[0]
            if is_pod_ready(pod):
                counts["numberReady"] += 1
                counts["numberAvailable"] += is_pod_available(pod, min_ready, now)
            counts["updatedNumberScheduled"] += du.is_pod_updated(pod, revision_hash, generation)
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        return counts

    async def _update_status(self, ds: dict[str, Any], nodes: Sequence[Obj], node_to_pods: Mapping[str, list[Obj]],
                             revision_hash: str, *, observed: bool) -> Result | None:
        counts = self._counts(ds, nodes, node_to_pods, revision_hash)
        await self._store_status(ds, counts, observed=observed)
        min_ready = int_field(ds.get("spec"), "minReadySeconds")
        if min_ready > 0 and counts["numberReady"] != counts["numberAvailable"]:
            return Result(requeue_after=float(min_ready))
        return None

    async def _store_status(self, ds: dict[str, Any], counts: Mapping[str, int], *, observed: bool) -> None:
        """``storeDaemonSetStatus``: nothing when the counts are unchanged and the generation observed."""
        generation = int_field(ds.get("metadata"), "generation")
        status = ds.get("status") or {}
        if all(int_field(status, k) == v for k, v in counts.items()) and int_field(status, "observedGeneration") >= generation:
            return
        current: dict[str, Any] = ds
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            new = {k: v for k, v in (current.get("status") or {}).items() if k not in _COUNTS}
            new.update({k: v for k, v in counts.items() if v or k in _ALWAYS})
            if observed:
                new["observedGeneration"] = generation
            try:
                await self.put_status(dict(current), new)
                return
            except ApiError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            current = await self.client.get(DAEMONSETS, name_of(ds), namespace=namespace_of(ds))

    # -- event plumbing --------------------------------------------------------------------------

    def resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        return resolve_controller(self.sets.cache, namespace, ref, "DaemonSet")

    def all_sets(self) -> list[Request]:
        return [Request.for_object(ds) for ds in self.sets.cache.list()]


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")




def _by_node(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """``getNodesToDaemonPods``: pods by the node they are for (pods naming none are skipped)."""
    grouped: dict[str, list[Obj]] = {}
    for pod in pods:
        node = du.target_node(pod)
        if node is not None:
            grouped.setdefault(node, []).append(pod)
    return grouped


class _PodEvents:
    """Pod events -> expectations observed and the sets to sync (``addPod``/``updatePod``/``deletePod``)."""

    def __init__(self, owner: DaemonSetController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "create":
            return self._added(event.object)
        if event.type == "delete":
            return self._deleted(event.object)
        if event.type == "update" and event.old_object is not None:
            return self._updated(event.old_object, event.object)
        return ()

    def _added(self, pod: Obj) -> list[Request]:
        if is_being_deleted(pod):
            return self._deleted(pod)
        ref = controller_of(pod)
        if ref is None:
            return owners_selecting(self.owner.sets.cache, pod)
        ds = self.owner.resolve(namespace_of(pod), ref)
        if ds is None:
            return []
        self.owner.expectations.creation_observed(object_key(ds))
        return [Request.for_object(ds)]

    def _updated(self, old: Obj, cur: Obj) -> list[Request]:
        if (old.get("metadata") or {}).get("resourceVersion") == (cur.get("metadata") or {}).get("resourceVersion"):
            return []
        if is_being_deleted(cur):
            return self._deleted(cur)
        found: list[Request] = []
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            previous = self.owner.resolve(namespace_of(old), old_ref)
            if previous is not None:
                found.append(Request.for_object(previous))
        if cur_ref is not None:
            ds = self.owner.resolve(namespace_of(cur), cur_ref)
            if ds is None:
                return found
            request = Request.for_object(ds)
            found.append(request)
            min_ready = int_field(ds.get("spec"), "minReadySeconds")
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                self.owner.controller.queue.add_after(request, float(min_ready) + 1.0)
            return found
        if labels_of(old) != labels_of(cur) or cur_ref != old_ref:
            found += owners_selecting(self.owner.sets.cache, cur)
        return found

    def _deleted(self, pod: Obj) -> list[Request]:
        ds = self.owner.resolve(namespace_of(pod), controller_of(pod))
        if ds is None:
            return []
        self.owner.expectations.deletion_observed(object_key(ds), object_key(pod))
        return [Request.for_object(ds)]


class _NodeEvents:
    """``addNode``/``updateNode``: the sets whose verdict on the node is (or changed to) run. A removed
    node also syncs every set (upstream has no delete handler: its sets notice at their next sync, or
    when the pod garbage collector deletes the node's pods)."""

    def __init__(self, owner: DaemonSetController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        sets = self.owner.sets.cache.list()
        if event.type == "create":
            return [Request.for_object(ds) for ds in sets if du.should_run(event.object, ds)[0]]
        if event.type == "delete":
            return self.owner.all_sets()
        old = event.old_object
        if event.type != "update" or old is None or du.node_update_ignored(old, event.object):
            return ()
        return [Request.for_object(ds) for ds in sets if du.should_run(old, ds) != du.should_run(event.object, ds)]
