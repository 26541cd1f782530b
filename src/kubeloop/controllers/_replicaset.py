"""The ReplicaSet controller: keep ``spec.replicas`` pods from the template, report what really runs.

Upstream: k/k ``pkg/controller/replicaset/replica_set.go`` and ``replica_set_utils.go``. One sync:

1. Read the ReplicaSet from the cache (gone: forget its expectations). Claim pods (adopt matching
   orphans, release ours that no longer match; :mod:`._workload_claim`) among the *active* pods.
2. Only when the expectations are satisfied and the set is not being deleted, manage replicas:
   too few -> create the missing pods (at most ``burst_replicas``) in slow-start batches 1, 2, 4 ...
   with ``generateName: <rs>-`` and a controller reference (``blockOwnerDeletion``); too many ->
   delete the lowest ranked (:func:`._workload_pods.deletion_order`, siblings of the same owner on
   the same node counted). Expectations are raised before the writes, so a cache that has not yet
   seen our own pods never causes a second create or delete.
3. Always recompute status from the claimed pods: ``replicas``, ``fullyLabeledReplicas``,
   ``readyReplicas``, ``availableReplicas`` (ready for ``minReadySeconds`` on the injected clock),
   ``observedGeneration`` = the generation this sync acted on, and the ``ReplicaFailure`` condition
   (FailedCreate / FailedDelete) while creates or deletes fail. Status is written only if it
   changed (PUT ``/status`` with the cached resourceVersion; one re-read and retry on failure).
4. If pods are ready but not yet available, look again after ``minReadySeconds``.

Pod events feed the expectations: an added pod with our controller reference is a creation
observed; a deleted pod (or one showing ``deletionTimestamp``) that we deleted is a deletion observed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Unpack

from kubeloop.api import (
    ApiError,
    LabelSelector,
    NotFound,
    controller_of,
    copy_json,
    format_time,
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.controllers._workload_base import WorkloadController, WorkloadOptions
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    controller_uid,
    owners_selecting,
    resolve_controller,
)
from kubeloop.controllers._workload_expectations import Expectations, OwnObjectEvents
from kubeloop.controllers._workload_kinds import PODS, REPLICASETS, int_field
from kubeloop.controllers._workload_pods import (
    deletion_order,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    slow_start_batch,
)
from kubeloop.runtime import (
    OWNER_UID_INDEX,
    Event,
    InformerFactory,
    Request,
    Result,
    SharedInformer,
    Watch,
    object_key,
)

__all__ = ["BURST_REPLICAS", "ReplicaSetController", "replicaset_status"]

log = logging.getLogger("kubeloop.controllers.replicaset")

BURST_REPLICAS = 500
STATUS_UPDATE_RETRIES = 1


def replicaset_status(
    rs: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], *, now: float, failure: tuple[str, str] | None
) -> dict[str, Any]:
    """``calculateStatus``: counts from the pods (without ``observedGeneration``).

    ``failure`` is (reason, message) of a failed create/delete this sync, which sets the
    ``ReplicaFailure`` condition if it is not there yet; ``None`` clears it.
    """
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int_field(spec, "minReadySeconds")
    replicas = fully_labeled = ready = available = 0
    for pod in pods:
        replicas += 1
        labels = labels_of(pod)
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    old = rs.get("status") or {}
    conditions = [dict(c) for c in old.get("conditions") or ()]
    current = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if failure is not None and current is None:
        conditions.append({
            "type": "ReplicaFailure", "status": "True", "lastTransitionTime": format_time(now),
            "reason": failure[0], "message": failure[1],
        })  # fmt: skip
    elif failure is None and current is not None:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    # Go omits the zero value of these omitempty fields; `replicas` is always present.
    status: dict[str, Any] = {"replicas": replicas}
    for key, value in (("fullyLabeledReplicas", fully_labeled), ("readyReplicas", ready),
                       ("availableReplicas", available)):  # fmt: skip
        if value:
            status[key] = value
    if conditions:
        status["conditions"] = conditions
    return status


class ReplicaSetController(WorkloadController):
    """Reconciles ReplicaSets; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "replicaset"
    kind = "ReplicaSet"
    resource = REPLICASETS

    @staticmethod
    def selector_of(owner: Mapping[str, Any]) -> LabelSelector:
        """The owner's pod selector (a ReplicaSet's ``spec.selector``, a LabelSelector)."""
        return label_selector_from_dict((owner.get("spec") or {}).get("selector"))

    def __init__(self, client: Client, informers: InformerFactory, *, burst_replicas: int = BURST_REPLICAS,
                 **options: Unpack[WorkloadOptions]) -> None:  # fmt: skip
        self.burst_replicas = burst_replicas
        super().__init__(client, informers, **options)
        self.expectations = Expectations(self.clock)

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.replicasets: SharedInformer = informers.informer(self.resource)
        self.pods: SharedInformer = add_orphan_index(informers.informer(PODS))
        return [Watch(self.replicasets, OwnObjectEvents(self)), Watch(self.pods, _PodEvents(self))]

    # -- reconcile -------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        rs = self.replicasets.cache.get(key)
        if rs is None:
            self.expectations.delete(key)
            return None
        needs_sync = self.expectations.satisfied(key)
        selector = self.selector_of(rs)
        active = [p for p in candidates(self.pods.cache, rs) if is_pod_active(p)]
        pods = await claim_children(
            self.client, owner=rs, owner_resource=self.resource, child_resource=PODS, children=active,
            matches=lambda p: selector.matches(labels_of(p)), field_manager=self.field_manager,
        )  # fmt: skip
        failure: tuple[str, str] | None = None
        manage_error: ApiError | None = None
        if needs_sync and not is_being_deleted(rs):
            try:
                await self._manage_replicas(key, rs, pods)
            except ApiError as err:
                manage_error = err
                diff = len(pods) - int_field(rs.get("spec"), "replicas", 1)
                failure = ("FailedCreate" if diff < 0 else "FailedDelete", err.message or str(err))
        now = self.clock.now()
        status = replicaset_status(rs, pods, now=now, failure=failure)
        await self._write_status(rs, status)
        if manage_error is not None:
            raise manage_error
        min_ready = int_field(rs.get("spec"), "minReadySeconds")
        if min_ready > 0 and status.get("readyReplicas", 0) == status["replicas"] != status.get("availableReplicas", 0):
            return Result(requeue_after=float(min_ready))
        return None

    async def _manage_replicas(self, key: str, rs: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> None:
        diff = len(pods) - int_field(rs.get("spec"), "replicas", 1)
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            # Raise expectations before any create: their Add events may arrive before we return.
            self.expectations.expect_creations(key, count)
            template = (rs.get("spec") or {}).get("template") or {}
            ref = owner_reference(rs, controller=True, block_owner_deletion=True)
            pod = pod_from_template(template, namespace=namespace_of(rs), generate_name=f"{name_of(rs)}-", owner_ref=ref)

            async def create() -> None:
                try:
                    made = await self.client.create(PODS, copy_json(pod), namespace=namespace_of(rs),
                                                    field_manager=self.field_manager)  # fmt: skip
                except ApiError as err:
                    if is_namespace_terminating_error(err):
                        # manageReplicas: every later create would fail too, so this one counts as done: no
                        # error, no Event (RealPodControl.createPods); its expectation stays until it expires, as
                        # upstream's (no new attempt before then).
                        return
                    self.event(rs, "Warning", "FailedCreate", f"Error creating: {err.message or err}")
                    raise
                self.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {name_of(made)}")

            created, error = await slow_start_batch(count, create)
            for _ in range(count - created):
                self.expectations.creation_observed(key)  # never to be seen by the informer
            if error is not None:
                raise error
        elif diff > 0:
            count = min(diff, self.burst_replicas)
            doomed = deletion_order(pods, related=self._related_pods(rs), now=self.clock.now())[:count]
            self.expectations.expect_deletions(key, [object_key(p) for p in doomed])
            results = await asyncio.gather(*(self._delete_pod(rs, p) for p in doomed), return_exceptions=True)
            first: BaseException | None = None
            for victim, outcome in zip(doomed, results, strict=True):
                if isinstance(outcome, BaseException):
                    self.expectations.deletion_observed(key, object_key(victim))
                    if not isinstance(outcome, NotFound) and first is None:
                        first = outcome
            if first is not None:
                raise first

    async def _delete_pod(self, rs: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod))
        except NotFound:
            raise
        except ApiError as err:
            self.event(rs, "Warning", "FailedDelete", f"Error deleting: {err.message or err}")
            raise
        self.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

    def _related_pods(self, rs: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Pods of every ReplicaSet controlled by the same owner (``getIndirectlyRelatedPods``)."""
        owner = controller_uid(rs)
        if owner is None:
            return [p for p in self.pods.cache.by_index(OWNER_UID_INDEX, uid_of(rs))]
        pods: list[dict[str, Any]] = []
        for sibling in self.replicasets.cache.by_index(OWNER_UID_INDEX, owner):
            if namespace_of(sibling) == namespace_of(rs) and controller_uid(sibling) == owner:
                pods.extend(p for p in self.pods.cache.by_index(OWNER_UID_INDEX, uid_of(sibling))
                            if controller_uid(p) == uid_of(sibling))  # fmt: skip
        return pods

    async def _write_status(self, rs: Mapping[str, Any], status: dict[str, Any]) -> None:
        generation = (rs.get("metadata") or {}).get("generation")
        if generation is not None:
            # The generation this sync acted on, also on a retry against a re-read object.
            status["observedGeneration"] = generation
        if status == (rs.get("status") or {}):
            return
        current: Mapping[str, Any] = rs
        fresh: dict[str, Any]
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            try:
                await self.put_status(dict(current), status)
                return
            except ApiError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            fresh = await self.client.get(self.resource, name_of(rs), namespace=namespace_of(rs))
            if uid_of(fresh) != uid_of(rs):
                return
            current = fresh

    # -- event plumbing --------------------------------------------------------------------------

    def resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The cached ReplicaSet a controller reference names (same UID), if any."""
        return resolve_controller(self.replicasets.cache, namespace, ref, self.kind)

    def replicasets_for_orphan(self, pod: Mapping[str, Any]) -> list[Request]:
        return owners_selecting(self.replicasets.cache, pod, selector_of=self.selector_of)


class _PodEvents:
    """Pod events -> expectations observed and the ReplicaSets to sync (``addPod``/``updatePod``/``deletePod``)."""

    def __init__(self, owner: ReplicaSetController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "create":
            return self._added(event.object)
        if event.type == "delete":
            return self._deleted(event.object)
        if event.type == "update" and event.old_object is not None:
            return self._updated(event.old_object, event.object)
        return ()

    def _added(self, pod: Mapping[str, Any]) -> list[Request]:
        if is_being_deleted(pod):
            # A pod already terminating when first seen (e.g. after a restart) is no creation.
            return self._deleted(pod)
        ref = controller_of(pod)
        if ref is not None:
            rs = self.owner.resolve(namespace_of(pod), ref)
            if rs is None:
                return []
            self.owner.expectations.creation_observed(object_key(rs))
            return [Request.for_object(rs)]
        return self.owner.replicasets_for_orphan(pod)

    def _updated(self, old: Mapping[str, Any], cur: Mapping[str, Any]) -> list[Request]:
        if (old.get("metadata") or {}).get("resourceVersion") == (cur.get("metadata") or {}).get("resourceVersion"):
            return []
        labels_changed = labels_of(old) != labels_of(cur)
        if is_being_deleted(cur):
            found = self._deleted(cur)
            if labels_changed:
                found += self._deleted(old)
            return found
        found = []
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self.owner.resolve(namespace_of(old), old_ref)
            if rs is not None:
                found.append(Request.for_object(rs))
        if cur_ref is not None:
            rs = self.owner.resolve(namespace_of(cur), cur_ref)
            if rs is None:
                return found
            request = Request.for_object(rs)
            found.append(request)
            min_ready = int_field(rs.get("spec"), "minReadySeconds")
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # Look again once the pod can count as available.
                self.owner.controller.queue.add_after(request, float(min_ready) + 1.0)
            return found
        if labels_changed or ref_changed:
            found += self.owner.replicasets_for_orphan(cur)
        return found

    def _deleted(self, pod: Mapping[str, Any]) -> list[Request]:
        rs = self.owner.resolve(namespace_of(pod), controller_of(pod))
        if rs is None:
            return []
        self.owner.expectations.deletion_observed(object_key(rs), object_key(pod))
        return [Request.for_object(rs)]
