"""The Deployment controller: ReplicaSets per pod template, rolled out and reported as upstream does.

Upstream: k/k ``pkg/controller/deployment/{deployment_controller.go, sync.go, progress.go}``. One sync
of a Deployment (read from the cache, copied):

1. An empty selector selects nothing: only ``observedGeneration`` is brought up to date.
2. Claim ReplicaSets (adopt matching orphans, release ours that stopped matching).
3. Being deleted: status only. Paused: the ``Progressing`` condition says ``DeploymentPaused``
   (``DeploymentResumed`` on resume), and only scaling happens (no rollout, no deadline).
4. A scaling event (an active RS whose ``desired-replicas`` annotation differs from
   ``spec.replicas``) scales proportionally; otherwise roll out with the strategy
   (:mod:`._deployment_rollout`).
5. Status from the ReplicaSets' own status (:func:`._deployment_util.calculate_status`), the
   ``Progressing`` condition from observed progress against ``progressDeadlineSeconds`` on the
   injected clock, written only when it changed. A rollout without progress is looked at again at
   ``lastUpdateTime + deadline + 1 s`` so the condition flips to ``ProgressDeadlineExceeded`` without
   any event.

The new ReplicaSet is ``<deployment>-<hash>`` with ``pod-template-hash=<hash>`` in its selector,
template labels and labels; a name collision with a foreign template bumps ``status.collisionCount``.
The revision annotation is written on the Deployment through ``/status`` (as upstream: status writes
keep metadata, and do not bump ``generation``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import (
    AlreadyExists,
    ApiError,
    annotations_of,
    controller_of,
    copy_json,
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    parse_time,
    uid_of,
)
from kubeloop.controllers import _deployment_util as du
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.controllers._workload_base import WorkloadController
from kubeloop.controllers._workload_claim import (
    add_orphan_index,
    candidates,
    claim_children,
    controller_uid,
    owners_selecting,
    resolve_controller,
)
from kubeloop.controllers._workload_hash import POD_TEMPLATE_HASH_LABEL, compute_hash, equal_ignore_hash
from kubeloop.controllers._workload_kinds import DEPLOYMENTS, PODS, REPLICASETS
from kubeloop.runtime import (
    OWNER_UID_INDEX,
    EnqueueForObject,
    Event,
    InformerFactory,
    Request,
    Result,
    SharedInformer,
    Watch,
    object_key,
)

__all__ = ["DeploymentController"]

log = logging.getLogger("kubeloop.controllers.deployment")

Obj = Mapping[str, Any]


class DeploymentController(WorkloadController):
    """Reconciles Deployments; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name = "deployment"
    kind = "Deployment"
    resource = DEPLOYMENTS
    # pkg/controller/deployment/deployment_controller.go: maxRetries = 15; handleErr logs "Error syncing
    # deployment" at V(2) below it (a routine 409 is not an error line), drops the key at it.
    max_retries = 15

    def watches(self, informers: InformerFactory) -> list[Watch]:
        self.deployments: SharedInformer = informers.informer(DEPLOYMENTS)
        self.replicasets: SharedInformer = add_orphan_index(informers.informer(REPLICASETS))
        self.pods: SharedInformer = informers.informer(PODS)
        return [Watch(self.deployments, EnqueueForObject()), Watch(self.replicasets, _ReplicaSetEvents(self)),
                Watch(self.pods, _PodEvents(self))]  # fmt: skip

    def now(self) -> float:
        return self.clock.now()

    # -- sync ------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        try:
            return await self._sync(request)
        except ApiError as err:
            # handleErr: HasStatusCause(err, v1.NamespaceTerminatingCause) forgets the key, as success does:
            # a new ReplicaSet cannot be created in a namespace being deleted, and retrying changes nothing.
            if is_namespace_terminating_error(err):
                return None
            raise

    async def _sync(self, request: Request) -> Result | None:
        from kubeloop.controllers import _deployment_rollout as rollout

        cached = self.deployments.cache.get_by_name(request.name, request.namespace)
        if cached is None:
            return None
        d: dict[str, Any] = copy_json(cached)
        selector = (d.get("spec") or {}).get("selector")
        if not selector:
            self.event(d, "Warning", "SelectingAll",
                       "This deployment is selecting all pods. A non-empty selector is required.")
            status = dict(d.get("status") or {})
            generation = (d.get("metadata") or {}).get("generation")
            if generation is not None and status.get("observedGeneration", 0) < generation:
                status["observedGeneration"] = generation
                await self.write_status(d, status)
            return None
        rss = await self._claim_replicasets(d)
        if is_being_deleted(d):
            new_rs, old_rss = await self.get_all_replicasets(d, rss, create=False)
            await self.sync_deployment_status([*old_rss, new_rs], new_rs, d)
            return None
        d = await self._check_paused_conditions(d)
        if (d.get("spec") or {}).get("paused"):
            return await rollout.sync(self, d, rss)
        if self._is_scaling_event(d, rss):
            return await rollout.sync(self, d, rss)
        if ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            return await rollout.rollout_recreate(self, d, rss, self._pod_map(rss))
        return await rollout.rollout_rolling(self, d, rss)

    async def _claim_replicasets(self, d: Obj) -> list[Obj]:
        selector = label_selector_from_dict((d.get("spec") or {}).get("selector"))
        return await claim_children(
            self.client, owner=d, owner_resource=DEPLOYMENTS, child_resource=REPLICASETS,
            children=candidates(self.replicasets.cache, d), matches=lambda rs: selector.matches(labels_of(rs)),
            field_manager=self.field_manager,
        )  # fmt: skip

    def _pod_map(self, rss: Iterable[Obj]) -> dict[str, list[dict[str, Any]]]:
        """Pods controlled by each claimed ReplicaSet, by RS uid (``getPodMapForDeployment``)."""
        return {
            uid_of(rs): [p for p in self.pods.cache.by_index(OWNER_UID_INDEX, uid_of(rs)) if controller_uid(p) == uid_of(rs)]
            for rs in rss
        }  # fmt: skip

    async def _check_paused_conditions(self, d: dict[str, Any]) -> dict[str, Any]:
        if du.progress_deadline(d) is None:
            return d
        status = dict(d.get("status") or {})
        cond = du.get_condition(status, "Progressing")
        if cond is not None and cond.get("reason") == du.TIMED_OUT:
            return d
        paused = bool((d.get("spec") or {}).get("paused"))
        paused_shown = cond is not None and cond.get("reason") == du.PAUSED
        if paused and not paused_shown:
            new = du.new_condition("Progressing", "Unknown", du.PAUSED, "Deployment is paused", self.now())
        elif not paused and paused_shown:
            new = du.new_condition("Progressing", "Unknown", du.RESUMED, "Deployment is resumed", self.now())
        else:
            return d
        du.set_condition(status, new)
        return await self.write_status(d, status)

    def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        """An active RS whose ``desired-replicas`` annotation is not ``spec.replicas`` (``isScalingEvent``)."""
        for rs in rss:
            if du.spec_replicas(rs) <= 0:
                continue
            desired = annotations_of(rs).get(du.DESIRED_REPLICAS)
            if desired is None:
                continue
            try:
                if int(desired) != du.spec_replicas(d):
                    return True
            except ValueError:
                continue
        return False

    # -- replica sets ----------------------------------------------------------------------------

    async def get_all_replicasets(
        self, d: dict[str, Any], rss: list[Obj], *, create: bool
    ) -> tuple[Obj | None, list[Obj]]:
        """(new RS or None, all old RSs) — ``getAllReplicaSetsAndSyncRevision``."""
        found = du.find_new_replica_set(d, rss)
        old = [rs for rs in rss if found is None or uid_of(rs) != uid_of(found)]
        new = await self._new_replicaset(d, rss, old, create=create)
        return new, old

    async def _new_replicaset(self, d: dict[str, Any], rss: list[Obj], old: list[Obj], *, create: bool) -> Obj | None:
        existing = du.find_new_replica_set(d, rss)
        new_revision = str(max((du.revision_of(rs) for rs in old), default=0) + 1)
        spec = d.get("spec") or {}
        min_ready = spec.get("minReadySeconds", 0) or 0
        if existing is not None:
            rs: dict[str, Any] = copy_json(dict(existing))
            changed = du.set_new_replica_set_annotations(d, rs, new_revision, exists=True)
            if (rs.get("spec") or {}).get("minReadySeconds", 0) != min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
                changed = True
            if changed:
                rs = await self.client.update(REPLICASETS, rs, namespace=namespace_of(d), field_manager=self.field_manager)
            status = dict(d.get("status") or {})
            needs_update = _set_revision(d, annotations_of(rs).get(du.REVISION, ""))
            if du.progress_deadline(d) is not None and du.get_condition(status, "Progressing") is None:
                msg = f'Found new replica set "{name_of(rs)}"'
                du.set_condition(status, du.new_condition("Progressing", "True", du.FOUND_NEW_RS, msg, self.now()))
                needs_update = True
            if needs_update:
                await self.write_status(d, status, force=True)
            return rs
        if not create:
            return None
        status = dict(d.get("status") or {})
        collisions = status.get("collisionCount")
        template = copy_json(spec.get("template") or {})
        pod_hash = compute_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH_LABEL] = pod_hash
        selector = copy_json(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH_LABEL] = pod_hash
        new_rs: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name_of(d)}-{pod_hash}", "namespace": namespace_of(d),
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [owner_reference(d, controller=True, block_owner_deletion=True)],
            },
            "spec": {"replicas": 0, "minReadySeconds": min_ready, "selector": selector, "template": template},
        }  # fmt: skip
        new_rs["spec"]["replicas"] = du.new_rs_new_replicas(d, [*old, new_rs], new_rs)
        du.set_new_replica_set_annotations(d, new_rs, new_revision, exists=False)
        already_existed = False
        try:
            created: Obj = await self.client.create(REPLICASETS, new_rs, namespace=namespace_of(d), field_manager=self.field_manager)
        except AlreadyExists:
            # Ours with an equal template (a stale cache): use it. Anything else is a hash collision.
            live = self.replicasets.cache.get(object_key(new_rs)) or await self.client.get(
                REPLICASETS, name_of(new_rs), namespace=namespace_of(d))
            ref = controller_uid(live)
            if ref == uid_of(d) and equal_ignore_hash((live.get("spec") or {}).get("template"), spec.get("template")):
                created, already_existed = live, True
            else:
                status["collisionCount"] = (collisions or 0) + 1
                await self.write_status(d, status, force=True)
                raise
        except ApiError as err:
            msg = f'Failed to create new replica set "{name_of(new_rs)}": {err.message or err}'
            self.event(d, "Warning", du.FAILED_RS_CREATE, msg)
            if du.progress_deadline(d) is not None:
                du.set_condition(status, du.new_condition("Progressing", "False", du.FAILED_RS_CREATE, msg, self.now()))
                try:
                    await self.write_status(d, status, force=True)
                except ApiError:
                    pass
            raise
        if not already_existed and du.spec_replicas(new_rs) > 0:
            self.event(d, "Normal", "ScalingReplicaSet",
                       f"Scaled up replica set {name_of(created)} from 0 to {du.spec_replicas(new_rs)}")
        needs_update = _set_revision(d, new_revision)
        if not already_existed and du.progress_deadline(d) is not None:
            msg = f'Created new replica set "{name_of(created)}"'
            du.set_condition(status, du.new_condition("Progressing", "True", du.NEW_RS_CREATED, msg, self.now()))
            needs_update = True
        if needs_update:
            await self.write_status(d, status, force=True)
        return created

    async def scale_replicaset(self, rs: Obj, replicas: int, d: Obj) -> tuple[bool, Obj]:
        """Set an RS's size and replica annotations (``scaleReplicaSet``); (whether the size changed, RS)."""
        size_changed = du.spec_replicas(rs) != replicas
        maximum = du.spec_replicas(d) + du.max_surge(d)
        if not size_changed and not du.replicas_annotations_need_update(rs, du.spec_replicas(d), maximum):
            return False, rs
        updated = copy_json(dict(rs))
        updated["spec"]["replicas"] = replicas
        du.set_replicas_annotations(updated, du.spec_replicas(d), maximum)
        written = await self.client.update(REPLICASETS, updated, namespace=namespace_of(rs), field_manager=self.field_manager)
        if size_changed:
            direction = "up" if replicas > du.spec_replicas(rs) else "down"
            self.event(d, "Normal", "ScalingReplicaSet",
                       f"Scaled {direction} replica set {name_of(rs)} from {du.spec_replicas(rs)} to {replicas}")
        return size_changed, written

    async def cleanup(self, old_rss: list[Obj], d: Obj) -> None:
        """Delete the oldest idle ReplicaSets beyond ``revisionHistoryLimit`` (``cleanupDeployment``)."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            return
        alive = sorted((rs for rs in old_rss if not is_being_deleted(rs)), key=du.by_revision)
        for rs in alive[: max(len(alive) - limit, 0)]:
            meta = rs.get("metadata") or {}
            if (du.status_int(rs, "replicas") != 0 or du.spec_replicas(rs) != 0
                    or int(meta.get("generation") or 0) > du.status_int(rs, "observedGeneration")):  # fmt: skip
                continue
            await self.client.delete(REPLICASETS, name_of(rs), namespace=namespace_of(rs))

    # -- status ----------------------------------------------------------------------------------

    async def write_status(self, d: dict[str, Any], status: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
        """PUT ``/status`` (metadata travels too: the revision annotation) when anything changed."""
        if not force and status == (d.get("status") or {}):
            return d
        return await self.put_status(d, status)

    async def sync_deployment_status(self, all_rss: list[Obj | None], new_rs: Obj | None, d: dict[str, Any]) -> None:
        rss = [rs for rs in all_rss if rs is not None]
        status = du.calculate_status(rss, new_rs, d, self.now())
        await self.write_status(d, status)

    async def sync_rollout_status(self, all_rss: list[Obj | None], new_rs: Obj | None, d: dict[str, Any]) -> Result | None:
        """``syncRolloutStatus``: counts plus the Progressing and ReplicaFailure conditions."""
        rss = [rs for rs in all_rss if rs is not None]
        now = self.now()
        status = du.calculate_status(rss, new_rs, d, now)
        deadline = du.progress_deadline(d)
        if deadline is None:
            du.remove_condition(status, "Progressing")
        current = du.get_condition(d.get("status"), "Progressing")
        complete_before = (int(status.get("replicas", 0)) == int(status.get("updatedReplicas", 0))
                           and current is not None and current.get("reason") == du.NEW_RS_AVAILABLE)  # fmt: skip
        if deadline is not None and not complete_before:
            what = f'ReplicaSet "{name_of(new_rs)}"' if new_rs is not None else f'Deployment "{name_of(d)}"'
            if du.deployment_complete(d, status):
                msg = f"{what} has successfully progressed."
                du.set_condition(status, du.new_condition("Progressing", "True", du.NEW_RS_AVAILABLE, msg, now))
            elif du.deployment_progressing(d, status):
                msg = f"{what} is progressing."
                cond = du.new_condition("Progressing", "True", du.RS_UPDATED, msg, now)
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    du.remove_condition(status, "Progressing")
                du.set_condition(status, cond)
            elif du.deployment_timed_out(d, status, now):
                msg = f"{what} has timed out progressing."
                du.set_condition(status, du.new_condition("Progressing", "False", du.TIMED_OUT, msg, now))
        failures = _replica_failures(rss, new_rs)
        if failures:
            du.set_condition(status, failures[0])
        else:
            du.remove_condition(status, "ReplicaFailure")
        if status == (d.get("status") or {}):
            return self._requeue_stuck(d, status)
        await self.write_status(d, status)
        return None

    def _requeue_stuck(self, d: Obj, status: Obj) -> Result | None:
        """Wake up when the progress deadline would pass (``requeueStuckDeployment``)."""
        current = du.get_condition(d.get("status"), "Progressing")
        deadline = du.progress_deadline(d)
        if deadline is None or current is None or du.deployment_complete(d, status):
            return None
        if current.get("reason") == du.TIMED_OUT:
            return None
        try:
            since = parse_time(str(current.get("lastUpdateTime")))
        except ValueError:
            return None
        after = since + deadline - self.now()
        return Result(requeue_after=max(after, 0.0) + 1.0)


def _set_revision(d: dict[str, Any], revision: str) -> bool:
    annotations = d.setdefault("metadata", {}).setdefault("annotations", {})
    if annotations.get(du.REVISION) == revision:
        return False
    annotations[du.REVISION] = revision
    return True


def _replica_failures(rss: list[Obj], new_rs: Obj | None) -> list[dict[str, Any]]:
    def convert(rs: Obj) -> list[dict[str, Any]]:
        return [
            {"type": "ReplicaFailure", "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
             "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"), "message": c.get("message")}
            for c in (rs.get("status") or {}).get("conditions") or () if c.get("type") == "ReplicaFailure"
        ]  # fmt: skip

    if new_rs is not None:
        found = convert(new_rs)
        if found:
            return found
    return [c for rs in rss for c in convert(rs)]


class _ReplicaSetEvents:
    """RS events -> the owning Deployment, or every Deployment whose selector matches an orphan."""

    def __init__(self, owner: DeploymentController) -> None:
        self.owner = owner

    def _resolve(self, obj: Obj, ref: Mapping[str, Any] | None) -> list[Request]:
        d = resolve_controller(self.owner.deployments.cache, namespace_of(obj), ref, "Deployment")
        return [Request.for_object(d)] if d is not None else []

    def requests(self, event: Event) -> Iterable[Request]:
        rs = event.object
        ref = controller_of(rs)
        deployments = self.owner.deployments.cache
        if event.type == "update" and event.old_object is not None:
            old = event.old_object
            if (old.get("metadata") or {}).get("resourceVersion") == (rs.get("metadata") or {}).get("resourceVersion"):
                return []
            old_ref = controller_of(old)
            found = self._resolve(old, old_ref) if old_ref != ref else []
            if ref is not None:
                return found + self._resolve(rs, ref)
            if labels_of(old) != labels_of(rs) or old_ref != ref:
                return found + owners_selecting(deployments, rs)
            return found
        if ref is not None:
            return self._resolve(rs, ref)
        return owners_selecting(deployments, rs) if event.type == "create" else []


class _PodEvents:
    """A deleted pod may unblock a Recreate rollout waiting for old pods to be gone."""

    def __init__(self, owner: DeploymentController) -> None:
        self.owner = owner

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type != "delete":
            return ()
        pod = event.object
        rs = resolve_controller(self.owner.replicasets.cache, namespace_of(pod), controller_of(pod), "ReplicaSet")
        if rs is None:
            return ()
        d = resolve_controller(self.owner.deployments.cache, namespace_of(rs), controller_of(rs), "Deployment")
        if d is None or ((d.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate":
            return ()
        return (Request.for_object(d),)
