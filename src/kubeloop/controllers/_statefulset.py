"""The StatefulSet controller: stable identities, ordered scaling, per-pod storage, partitioned rollouts.

Upstream: k/k ``pkg/controller/statefulset/{stateful_set.go, stateful_set_control.go}``. One sync:

1. Claim pods (selector and controller reference). Resolve revisions: the update revision is the
   ControllerRevision ``<set>-<hash>`` of the current template (created if missing, renumbered when
   an old template comes back); the current revision is ``status.currentRevision`` (or the update
   revision for a new set).
2. Ordinals ``start .. start+replicas-1`` are wanted; others are condemned (highest first). A missing
   pod is created with its PVCs (``<template>-<set>-<ordinal>``, created if absent, never updated
   from the template); ordinals below ``partition`` use the current revision's template.
3. ``OrderedReady``: one step at a time: create the lowest missing ordinal and wait until it is
   Running and Ready; never proceed past a terminating or unhealthy pod; remove condemned pods from
   the highest ordinal down, one at a time, only while every other pod is healthy. ``Parallel``:
   create and delete without waiting (updates are still ordered).
4. ``persistentVolumeClaimRetentionPolicy`` through PVC ownerReferences (see
   :func:`._statefulset_util.claim_owner_refs`), updated before a condemned pod is deleted so the
   garbage collector removes its PVCs only after the pod is gone.
5. Rolling update: from the highest ordinal down to ``partition``, delete one pod that is not on
   the update revision, then wait for its replacement to be healthy. ``OnDelete`` leaves pods alone.
6. Status from the pods: ``replicas``, ``readyReplicas``, ``availableReplicas``, ``currentReplicas``,
   ``updatedReplicas``, ``currentRevision``, ``updateRevision``, ``collisionCount``,
   ``observedGeneration``; once every pod is updated and ready, the update revision becomes current.
   Written only on change. Old ControllerRevisions beyond ``revisionHistoryLimit`` that no pod
   uses are deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import (
    AlreadyExists,
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
    uid_of,
)
from kubeloop.controllers import _statefulset_util as su
from kubeloop.controllers._workload_base import WorkloadController
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    owners_selecting,
)
from kubeloop.controllers._workload_kinds import PODS, PVCS, REVISIONS, STATEFULSETS, int_field
from kubeloop.controllers._workload_pods import is_pod_active, is_pod_available, is_pod_ready
from kubeloop.runtime import (
    OWNER_UID_INDEX,
    EnqueueForObject,
    EnqueueForOwner,
    Event,
    InformerFactory,
    Request,
    Result,
    SharedInformer,
    Watch,
)

__all__ = ["StatefulSetController"]

Obj = Mapping[str, Any]


def _running_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_ready(pod)


def _failed(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


class StatefulSetController(WorkloadController):
    """Reconciles StatefulSets; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "statefulset"
    kind = "StatefulSet"
    resource = STATEFULSETS

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.sets: SharedInformer = informers.informer(STATEFULSETS)
        self.pods: SharedInformer = add_orphan_index(informers.informer(PODS))
        self.claims: SharedInformer = informers.informer(PVCS)
        self.revisions: SharedInformer = informers.informer(REVISIONS)
        return [Watch(self.sets, EnqueueForObject()), Watch(self.pods, _PodEvents(self)),
                Watch(self.revisions, EnqueueForOwner(STATEFULSETS))]  # fmt: skip

    async def reconcile(self, request: Request) -> Result | None:
        cached = self.sets.cache.get_by_name(request.name, request.namespace)
        if cached is None:
            return None
        sts: dict[str, Any] = copy_json(cached)
        spec = sts.get("spec") or {}
        selector = label_selector_from_dict(spec.get("selector"))
        active = [p for p in candidates(self.pods.cache, sts) if is_pod_active(p) or _failed(p)]
        pods = await claim_children(
            self.client, owner=sts, owner_resource=STATEFULSETS, child_resource=PODS, children=active,
            matches=lambda p: selector.matches(labels_of(p)) and su.ordinal_of(sts, p) is not None,
            field_manager=self.field_manager,
        )  # fmt: skip
        status = dict(sts.get("status") or {})
        current_rev, update_rev = await self._revisions(sts, status)
        new_status = await self._update_set(sts, pods, current_rev, update_rev)
        await self._write_status(sts, new_status)
        await self._truncate_history(sts, pods, new_status)
        min_ready = int_field(spec, "minReadySeconds")
        if min_ready > 0 and new_status.get("availableReplicas", 0) != new_status.get("readyReplicas", 0):
            return Result(requeue_after=float(min_ready))
        return None

    # -- revisions -------------------------------------------------------------------------------

    def _owned_revisions(self, sts: Obj) -> list[dict[str, Any]]:
        return sorted(
            (r for r in self.revisions.cache.by_index(OWNER_UID_INDEX, uid_of(sts)) if namespace_of(r) == namespace_of(sts)),
            key=lambda r: int_field(r, "revision"),
        )  # fmt: skip

    async def _revisions(self, sts: dict[str, Any], status: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        template = (sts.get("spec") or {}).get("template") or {}
        owned = self._owned_revisions(sts)
        latest = max((int_field(r, "revision") for r in owned), default=0)
        collisions = status.get("collisionCount")
        name = su.revision_name(sts, template, collisions)
        update = next((r for r in owned if name_of(r) == name), None)
        if update is None:
            body = {
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": name, "namespace": namespace_of(sts),
                             "labels": {**((sts["spec"].get("selector") or {}).get("matchLabels") or {}),
                                        su.REVISION_LABEL: name},
                             "ownerReferences": [owner_reference(sts, controller=True, block_owner_deletion=True)]},
                "data": su.revision_data(template), "revision": latest + 1,
            }  # fmt: skip
            try:
                update = await self.client.create(REVISIONS, body, namespace=namespace_of(sts), field_manager=self.field_manager)
            except AlreadyExists:
                live = await self.client.get(REVISIONS, name, namespace=namespace_of(sts))
                if su.template_of_revision(live) != su.template_of_revision(body):
                    status["collisionCount"] = (collisions or 0) + 1
                    await self._write_status(sts, status)
                raise
        elif int_field(update, "revision") < latest and name_of(update) != status.get("updateRevision"):
            # An old template is back (rollback): it becomes the newest revision.
            update = await self.client.update(REVISIONS, {**update, "revision": latest + 1},
                                              namespace=namespace_of(sts), field_manager=self.field_manager)  # fmt: skip
        current_name = status.get("currentRevision") or name_of(update)
        current = next((r for r in owned if name_of(r) == current_name), update)
        return current, update

    async def _truncate_history(self, sts: Obj, pods: list[Obj], status: Obj) -> None:
        limit = int_field(sts.get("spec"), "revisionHistoryLimit", 10)
        live = {status.get("currentRevision"), status.get("updateRevision")}
        live |= {labels_of(p).get(su.REVISION_LABEL) for p in pods}
        history = [r for r in self._owned_revisions(sts) if name_of(r) not in live]
        for revision in history[: max(len(history) - limit, 0)]:
            try:
                await self.client.delete(REVISIONS, name_of(revision), namespace=namespace_of(revision))
            except NotFound:
                pass

    # -- the set ---------------------------------------------------------------------------------

    async def _update_set(
        self, sts: dict[str, Any], pods: list[Obj], current: dict[str, Any], update: dict[str, Any]
    ) -> dict[str, Any]:
        spec = sts.get("spec") or {}
        replicas = int_field(spec, "replicas", 1)
        start = su.start_ordinal(sts)
        partition = int_field((spec.get("updateStrategy") or {}).get("rollingUpdate"), "partition")
        monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        current_name, update_name = name_of(current), name_of(update)
        status = self._count(sts, pods, current_name, update_name)
        if is_being_deleted(sts):
            return status
        wanted: list[Obj | None] = [None] * replicas
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = su.ordinal_of(sts, pod)
            assert ordinal is not None
            if start <= ordinal < start + replicas:
                wanted[ordinal - start] = pod
            else:
                condemned.append(pod)
        condemned.sort(key=lambda p: su.ordinal_of(sts, p) or 0, reverse=True)
        unhealthy = next((p for p in [*wanted, *condemned] if p is not None and not self._healthy(sts, p)), None)

        for index, slot in enumerate(wanted):
            ordinal = start + index
            if slot is not None and _failed(slot):
                self.event(sts, "Warning", "RecreatingFailedPod",
                            f"StatefulSet {namespace_of(sts)}/{name_of(sts)} is recreating failed Pod {name_of(slot)}")
                await self._delete(sts, slot)
                if monotonic:
                    return status
                continue
            if slot is None:
                use_current = ordinal < partition and current_name != update_name
                revision = current if use_current else update
                await self._create_claims(sts, ordinal)
                await self._create(sts, su.new_pod(sts, su.template_of_revision(revision), ordinal, name_of(revision)))
                if monotonic:
                    return status
                continue
            await self._sync_claims(sts, slot, condemned=False)
            if monotonic and (is_being_deleted(slot) or not self._healthy(sts, slot)):
                return status
        for pod in condemned:
            if is_being_deleted(pod):
                if monotonic:
                    return status
                continue
            if monotonic and unhealthy is not None and unhealthy is not pod:
                return status
            await self._sync_claims(sts, pod, condemned=True)
            await self._delete(sts, pod)
            if monotonic:
                return status
        if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
            return status
        for index in range(replicas - 1, max(partition - start, 0) - 1, -1):
            target = wanted[index]
            if target is None:
                continue
            if labels_of(target).get(su.REVISION_LABEL) != update_name and not is_being_deleted(target):
                await self._delete(sts, target)
                return status
            if not self._healthy(sts, target):
                return status
        return status

    def _healthy(self, sts: Obj, pod: Obj) -> bool:
        min_ready = int_field(sts.get("spec"), "minReadySeconds")
        return _running_ready(pod) and is_pod_available(pod, min_ready, self.clock.now()) and not is_being_deleted(pod)

    def _count(self, sts: Obj, pods: Iterable[Obj], current: str, update: str) -> dict[str, Any]:
        min_ready = int_field(sts.get("spec"), "minReadySeconds")
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0}
        for pod in pods:
            counts["replicas"] += 1
            if _running_ready(pod):
                counts["readyReplicas"] += 1
                if is_pod_available(pod, min_ready, self.clock.now()):
                    counts["availableReplicas"] += 1
            if not is_being_deleted(pod):
                revision = labels_of(pod).get(su.REVISION_LABEL)
                counts["currentReplicas"] += revision == current
                counts["updatedReplicas"] += revision == update
        status: dict[str, Any] = {"replicas": counts["replicas"], "availableReplicas": counts["availableReplicas"]}
        for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if counts[key]:
                status[key] = counts[key]
        status["currentRevision"], status["updateRevision"] = current, update
        old = sts.get("status") or {}
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        # completeRollingUpdate: every pod updated and ready -> the update revision is current.
        if (((sts.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
                and counts["updatedReplicas"] == counts["replicas"] == counts["readyReplicas"]):  # fmt: skip
            status["currentRevision"] = update
            if counts["updatedReplicas"]:
                status["currentReplicas"] = counts["updatedReplicas"]
        return status

    # -- writes ----------------------------------------------------------------------------------

    # Upstream's messages (stateful_pod_control.go recordPodEvent / recordClaimEvent).
    async def _create(self, sts: Obj, pod: dict[str, Any]) -> None:
        what = f"Pod {name_of(pod)} in StatefulSet {name_of(sts)}"
        try:
            await self.client.create(PODS, pod, namespace=namespace_of(pod), field_manager=self.field_manager)
        except AlreadyExists:
            return  # a deterministic name: the pod exists, the cache has not seen it yet
        except ApiError as err:
            self.event(sts, "Warning", "FailedCreate", f"create {what} failed error: {err.message or err}")
            raise
        self.event(sts, "Normal", "SuccessfulCreate", f"create {what} successful")

    async def _delete(self, sts: Obj, pod: Obj) -> None:
        what = f"Pod {name_of(pod)} in StatefulSet {name_of(sts)}"
        try:
            await self.client.delete(PODS, name_of(pod), namespace=namespace_of(pod),
                                     preconditions={"uid": uid_of(pod)})  # fmt: skip
        except NotFound:
            return
        except ApiError as err:
            self.event(sts, "Warning", "FailedDelete", f"delete {what} failed error: {err.message or err}")
            raise
        self.event(sts, "Normal", "SuccessfulDelete", f"delete {what} successful")

    async def _create_claims(self, sts: Obj, ordinal: int) -> None:
        for claim in su.new_claims(sts, ordinal):
            if self.claims.cache.get_by_name(name_of(claim), namespace_of(sts)) is not None:
                continue
            pod_stub = {"metadata": {"name": f"{name_of(sts)}-{ordinal}", "uid": ""}}
            refs = su.claim_owner_refs(sts, pod_stub, claim, condemned=False)
            if refs:
                claim["metadata"]["ownerReferences"] = refs
            what = f"Claim {name_of(claim)} Pod {name_of(sts)}-{ordinal} in StatefulSet {name_of(sts)}"
            try:
                await self.client.create(PVCS, claim, namespace=namespace_of(sts), field_manager=self.field_manager)
            except AlreadyExists:
                continue
            except ApiError as err:
                self.event(sts, "Warning", "FailedCreate", f"create {what} failed error: {err.message or err}")
                raise
            self.event(sts, "Normal", "SuccessfulCreate", f"create {what} success")

    async def _sync_claims(self, sts: Obj, pod: Obj, *, condemned: bool) -> None:
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            ordinal = su.ordinal_of(sts, pod)
            assert ordinal is not None
            claim = self.claims.cache.get_by_name(su.claim_name(template, sts, ordinal), namespace_of(sts))
            if claim is None:
                continue
            refs = su.claim_owner_refs(sts, pod, claim, condemned=condemned)
            if refs is None or refs == list((claim.get("metadata") or {}).get("ownerReferences") or []):
                continue
            updated = copy_json(claim)
            if refs:
                updated["metadata"]["ownerReferences"] = refs
            else:
                updated["metadata"].pop("ownerReferences", None)
            await self.client.update(PVCS, updated, namespace=namespace_of(sts), field_manager=self.field_manager)

    async def _write_status(self, sts: dict[str, Any], status: dict[str, Any]) -> None:
        generation = (sts.get("metadata") or {}).get("generation")
        if generation is not None:
            status["observedGeneration"] = generation
        if status != (sts.get("status") or {}):
            await self.put_status(sts, status)


class _PodEvents:
    """Pod events -> the owning set, or for an orphan every set whose selector matches it, so a set
    adopts a matching orphan as soon as it appears (upstream's ``addPod``/``updatePod``)."""

    def __init__(self, owner: StatefulSetController) -> None:
        self.owner = owner
        self._by_owner = EnqueueForOwner(STATEFULSETS)

    def requests(self, event: Event) -> Iterable[Request]:
        found = list(self._by_owner.requests(event))
        for pod in event.objects():
            if controller_of(pod) is not None or is_being_deleted(pod):
                continue
            found.extend(owners_selecting(self.owner.sets.cache, pod))
        return found
