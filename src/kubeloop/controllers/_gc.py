"""The garbage collector: deletes dependents whose owners are gone, runs foreground and orphan deletion.

Upstream: k/k ``pkg/controller/garbagecollector/garbagecollector.go`` (``attemptToDeleteItem``,
``classifyReferences``, ``processDeletingDependentsItem``, ``attemptToOrphanWorker``) and
``operations.go``; facts in controllers reference section 1. It reaches the API only through the
client, so it works against any cluster.

Decision for one node pulled from ``attempt_to_delete`` (:meth:`GarbageCollector.attempt_to_delete_item`):

1. Being deleted and not in foreground mode: nothing to do (deletion is one-way).
2. Read the item: from its informer when the node was observed there with this uid, else a live GET
   (upstream always GETs live and notes that only virtual nodes need it; every write below is
   conditional on the uid and resourceVersion read, so a stale copy costs a 409 and a retry that reads
   live, never a wrong write). Missing, or a different uid: a virtual delete removes the stale node from the graph.
3. Deleting dependents (foreground): delete the dependents that block it (they inherit foreground
   propagation when they have dependents of their own); once none blocks, drop ``foregroundDeletion``.
4. Classify each ownerReference with a live lookup of the owner *in the dependent's namespace*
   (the absent-owner cache first): missing or a different uid is **dangling** (so an owner recreated
   under the same name does not adopt the old dependents, and an owner in another namespace does not
   count); ``deletionTimestamp`` plus ``foregroundDeletion`` is **waiting**; anything else is **solid**.
   A cluster-scoped dependent naming a namespaced owner kind is never collected (Warning Event).
5. A solid owner keeps the dependent alive: only the dangling and waiting references are removed,
   by a merge patch that carries the dependent's uid and resourceVersion.
6. No solid owner, some waiting and the item has dependents: delete it with Foreground propagation.
   Otherwise delete it, keeping an ``orphan``/``foregroundDeletion`` finalizer it already has.

Every delete carries uid and resourceVersion preconditions for the version that was classified. On
409 the object is read again: gone is fine; same ownerReferences (unrelated churn) retries with the
uid precondition only; changed ownerReferences re-queue the item to be classified again, so a
dependent re-parented between the check and the delete survives (k/k PR #132632, pitfall 8).

Orphan (``attempt_to_orphan``): remove the owner's reference from every dependent in the graph, then
drop the ``orphan`` finalizer. Errors re-queue with the rate limiter (5 ms .. 1000 s, 10/s burst 100).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable
from typing import Any

from kubeloop.api import (
    BUILTIN_RESOURCES,
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    Clock,
    Conflict,
    NotFound,
    ResourceInfo,
    SystemClock,
    has_finalizer,
    is_being_deleted,
    metadata_of,
    owner_references,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.controllers._gc_events import GcEvents
from kubeloop.controllers._gc_graph import Node, ObjectReference, OwnerGraph
from kubeloop.controllers._gc_monitors import Monitors
from kubeloop.runtime import (
    InformerFactory,
    Metrics,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
)

__all__ = ["GarbageCollector"]

log = logging.getLogger("kubeloop.controllers.gc")


class _RestMappingError(Exception):
    """The owner's apiVersion/kind is not (yet) served: retried, as upstream does."""


class _NamespacedOwnerOfClusterScoped(Exception):
    """A cluster-scoped dependent names a namespaced owner kind: never resolvable, never retried."""


class GarbageCollector:
    """Run with :meth:`run`; ``synced`` is set once the first discovery's monitors have synced.

    ``expected_resources``: kinds to start monitoring before discovery answers (default: kubeloop's
    built-in kinds, which a 1.32 server serves at these versions); discovery then decides, as upstream.

    ``informers``: a factory watching every namespace whose informers the monitors share for the kinds
    it already watches (see :mod:`kubeloop.controllers._gc_monitors`); its owner starts and stops
    them, as a :class:`~kubeloop.runtime.Manager` does with its own, so the GC syncs once it runs."""

    def __init__(
        self,
        client: Client,
        *,
        expected_resources: Iterable[ResourceInfo] = BUILTIN_RESOURCES,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        workers: int = 20,
        resync_period: float = 30.0,
        sync_timeout: float = 30.0,
        metrics: Metrics | None = None,
        informers: InformerFactory | None = None,
    ) -> None:
        self._client = client
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._rng = rng if rng is not None else random.Random()
        self.workers = workers
        self.sync_timeout = sync_timeout
        metrics = metrics if metrics is not None else Metrics()
        self.attempt_to_delete: RateLimitingQueue[str] = RateLimitingQueue(
            name="garbage_collector_attempt_to_delete", clock=self._clock, metrics=metrics,
            rate_limiter=default_controller_rate_limiter(clock=self._clock),
        )  # fmt: skip
        self.attempt_to_orphan: RateLimitingQueue[str] = RateLimitingQueue(
            name="garbage_collector_attempt_to_orphan", clock=self._clock, metrics=metrics,
            rate_limiter=default_controller_rate_limiter(clock=self._clock),
        )  # fmt: skip
        self.events = GcEvents(client, clock=self._clock, component="garbage-collector-controller")
        self.graph = OwnerGraph(
            attempt_to_delete=self.attempt_to_delete.add,
            attempt_to_orphan=self.attempt_to_orphan.add,
            report_invalid=self._report_invalid_namespace,
            requeue_rate_limited=self.attempt_to_delete.add_rate_limited,
        )
        self.monitors = Monitors(
            client, self._handlers, clock=self._clock, rng=self._rng, resync_period=resync_period, shared=informers
        )
        self._expected = tuple(expected_resources)
        self.synced = asyncio.Event()
        self._in_flight = 0
        self._background: list[asyncio.Task[None]] = []

    def has_synced(self) -> bool:
        return self.synced.is_set()

    def stop(self) -> None:
        """Workers finish the item in hand and take no more; :meth:`run` then returns."""
        self.attempt_to_delete.shutdown()
        self.attempt_to_orphan.shutdown()
        for task in self._background:
            task.cancel()

    def idle(self) -> bool:
        """Nothing queued, in flight or waiting for a retry (for tests and tools)."""
        queues = (self.attempt_to_delete, self.attempt_to_orphan)
        return self._in_flight == 0 and all(len(q) == 0 and q.waiting == 0 for q in queues)

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            # Discovery is asked first; the kinds the server is expected to serve are listed meanwhile,
            # beside the manager's informers, instead of after discovery answers (the sync keeps only
            # what discovery lists).
            first = asyncio.ensure_future(self.monitors.sync())
            self.monitors.start_expected(self._expected)
            discovered = await first
            while not discovered:
                await self._clock.sleep(1.0)
                discovered = await self.monitors.sync()
            if not await self.monitors.wait_for_sync(self.sync_timeout):
                log.warning("garbage collector: some monitors did not sync; their objects are not collected yet")
            self.synced.set()
            async with asyncio.TaskGroup() as tg:
                self._background = [
                    tg.create_task(self.monitors.run_resync(), name="gc-resync"),
                    tg.create_task(self.events.run(), name="gc-events"),
                ]
                for i in range(self.workers):
                    tg.create_task(self._worker(self.attempt_to_delete, self._delete_one), name=f"gc-delete-{i}")
                    tg.create_task(self._worker(self.attempt_to_orphan, self._orphan_one), name=f"gc-orphan-{i}")
        finally:
            self.attempt_to_delete.shutdown()
            self.attempt_to_orphan.shutdown()
            await self.monitors.stop()

    def _handlers(self, info: ResourceInfo) -> tuple[
        Callable[[dict[str, Any]], None], Callable[[dict[str, Any], dict[str, Any]], None], Callable[[dict[str, Any]], None]
    ]:
        api_version, kind = info.api_version, info.kind

        def on_add(obj: dict[str, Any]) -> None:
            self.graph.upsert(obj, None, api_version=api_version, kind=kind)

        def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
            self.graph.upsert(new, old, api_version=api_version, kind=kind)

        def on_delete(obj: dict[str, Any]) -> None:
            self.graph.remove(obj, api_version=api_version, kind=kind)

        return on_add, on_update, on_delete

    async def _worker(self, queue: RateLimitingQueue[str], process: Callable[[Node], Any]) -> None:
        while True:
            try:
                uid = await queue.get()
            except QueueShutDown:
                return
            self._in_flight += 1
            try:
                node = self.graph.nodes.get(uid)
                if node is None:
                    queue.forget(uid)
                    continue
                requeue = await process(node)
                if requeue:
                    queue.add_rate_limited(uid)
                else:
                    queue.forget(uid)
            except asyncio.CancelledError:
                raise
            except _NamespacedOwnerOfClusterScoped:
                queue.forget(uid)
            except Exception as err:  # retry with backoff; a worker never dies
                if not isinstance(err, _RestMappingError | Conflict):
                    # attemptToDeleteWorker: utilruntime.HandleError, an error line.
                    log.error("garbage collector: error syncing %s: %r", uid, err)
                queue.add_rate_limited(uid)
            finally:
                self._in_flight -= 1
                queue.done(uid)

    # -- attemptToDelete ------------------------------------------------------------------------

    async def _delete_one(self, node: Node) -> bool:
        """One pass of ``attemptToDeleteItem``; ``True`` to re-queue with backoff."""
        virtual_delete = await self.attempt_to_delete_item(node)
        if virtual_delete:
            return False
        # Items processed before their informer observed them are re-checked until it does.
        return node.virtual and self.graph.nodes.get(node.uid) is node

    async def attempt_to_delete_item(self, node: Node) -> bool:
        """Returns ``True`` when the node turned out stale and a virtual delete was applied."""
        if node.being_deleted and not node.deleting_dependents:
            return False
        resource = self._resource(node.identity.api_version, node.identity.kind)
        # Upstream GETs the item live here, noting that only a virtual node needs it ("the local graph could
        # lag behind the real status, but in practice, the difference is small"). An observed item's first
        # attempt reads its informer instead: every write below is conditional on the uid and resourceVersion
        # read, so a stale copy ends in a Conflict, and the retry (a requeue) reads live.
        first_attempt = self.attempt_to_delete.num_requeues(node.uid) == 0
        latest = self._observed(resource, node) if first_attempt and not node.virtual else None
        if latest is None:
            latest = await self._get(resource, node.identity.namespace, node.identity.name)
        if latest is None or uid_of(latest) != node.uid:
            self.graph.virtual_delete(node.identity)
            return True
        if node.deleting_dependents:
            await self._process_deleting_dependents(node, resource, latest)
            return False
        owners = owner_references(latest)
        if not owners:
            return False
        solid, dangling, waiting = await self._classify(node, owners)
        if solid:
            drop = {str(r.get("uid")) for r in dangling + waiting}
            if drop:
                await self._patch_owner_refs(resource, latest, drop)
            return False
        if waiting and node.dependents:
            if any(d.deleting_dependents for d in self.graph.dependents(node)):
                # Break cycles: our own blocking references must not hold up an owner that waits on us.
                latest = await self._unblock_owner_refs(resource, latest)
            await self._delete(resource, latest, "Foreground")
            return False
        if has_finalizer(latest, FINALIZER_ORPHAN_DEPENDENTS):
            policy = "Orphan"
        elif has_finalizer(latest, FINALIZER_DELETE_DEPENDENTS):
            policy = "Foreground"
        else:
            policy = "Background"
        await self._delete(resource, latest, policy)
        return False

    async def _process_deleting_dependents(self, node: Node, resource: ResourceInfo, latest: dict[str, Any]) -> None:
        blocking = self.graph.blocking_dependents(node)
        if not blocking:
            await self._remove_finalizer(resource, latest, FINALIZER_DELETE_DEPENDENTS)
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self.attempt_to_delete.add(dep.uid)

    async def _classify(
        self, node: Node, refs: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        solid: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        waiting: list[dict[str, Any]] = []
        for ref in refs:
            owner = await self._live_owner(node, ref)
            if owner is None:
                dangling.append(ref)
            elif is_being_deleted(owner) and has_finalizer(owner, FINALIZER_DELETE_DEPENDENTS):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _live_owner(self, node: Node, ref: dict[str, Any]) -> dict[str, Any] | None:
        """``isDangling``: the live owner, or ``None`` when the reference dangles."""
        key = ObjectReference.of_owner(ref, "")
        if key in self.graph.absent:
            return None
        key = ObjectReference.of_owner(ref, node.identity.namespace)
        if key in self.graph.absent:
            return None
        resource = self._resource(key.api_version, key.kind)
        if not resource.namespaced:
            key = ObjectReference.of_owner(ref, "")
        elif not node.identity.namespace:
            self._report_cluster_scoped_dependent(node, ref)
            raise _NamespacedOwnerOfClusterScoped(str(node.identity))
        owner = await self._get(resource, node.identity.namespace, key.name)
        if owner is None or uid_of(owner) != key.uid:
            self.graph.absent.add(key)
            return None
        return owner

    # -- attemptToOrphan ------------------------------------------------------------------------

    async def _orphan_one(self, owner: Node) -> bool:
        for dep in self.graph.dependents(owner):
            resource = self._resource(dep.identity.api_version, dep.identity.kind)
            latest = await self._get(resource, dep.identity.namespace, dep.identity.name)
            if latest is None or uid_of(latest) != dep.uid:
                continue
            await self._patch_owner_refs(resource, latest, {owner.uid})
        resource = self._resource(owner.identity.api_version, owner.identity.kind)
        latest = await self._get(resource, owner.identity.namespace, owner.identity.name)
        if latest is not None and uid_of(latest) == owner.uid:
            await self._remove_finalizer(resource, latest, FINALIZER_ORPHAN_DEPENDENTS)
        return False

    # -- operations -----------------------------------------------------------------------------

    def _resource(self, api_version: str, kind: str) -> ResourceInfo:
        resource = self.monitors.resource_for(api_version, kind)
        if resource is None:
            raise _RestMappingError(f"no resource serves {kind} in {api_version}")
        return resource

    def _observed(self, resource: ResourceInfo, node: Node) -> dict[str, Any] | None:
        cached = self.monitors.cached(resource, node.identity.namespace, node.identity.name)
        if cached is None or uid_of(cached) != node.uid:
            return None
        return cached

    async def _get(self, resource: ResourceInfo, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self._client.get(resource, name, namespace=namespace if resource.namespaced else None)
        except NotFound:
            return None

    async def _delete(self, resource: ResourceInfo, latest: dict[str, Any], policy: str) -> None:
        """``deleteObject`` with uid + resourceVersion preconditions of the classified version."""
        meta = latest.get("metadata") or {}
        name, namespace, uid = str(meta.get("name")), str(meta.get("namespace") or ""), str(meta.get("uid"))
        preconditions: dict[str, Any] = {"uid": uid, "resourceVersion": meta.get("resourceVersion")}
        log.info("garbage collector: deleting %s %s/%s (propagation %s)", resource.kind, namespace, name, policy)
        try:
            await self._client.delete(resource, name, namespace=namespace or None, propagation_policy=policy,
                                      preconditions=preconditions)  # fmt: skip
            return
        except NotFound:
            return
        except Conflict:
            current = await self._get(resource, namespace, name)
            if current is None or uid_of(current) != uid:
                return
            if owner_references(current) != owner_references(latest):
                raise  # ownerReferences changed since the check: classify again
        try:
            await self._client.delete(resource, name, namespace=namespace or None, propagation_policy=policy,
                                      preconditions={"uid": uid})  # fmt: skip
        except NotFound:
            return

    async def _patch_owner_refs(self, resource: ResourceInfo, latest: dict[str, Any], drop: set[str]) -> None:
        """``deleteOwnerRefJSONMergePatch``: the remaining references, conditional on uid and resourceVersion."""
        remaining = [r for r in owner_references(latest) if str(r.get("uid")) not in drop]
        await self._merge_patch(resource, latest, {"ownerReferences": remaining or None})

    async def _unblock_owner_refs(self, resource: ResourceInfo, latest: dict[str, Any]) -> dict[str, Any]:
        refs = [{**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r for r in owner_references(latest)]
        return await self._merge_patch(resource, latest, {"ownerReferences": refs}) or latest

    async def _remove_finalizer(self, resource: ResourceInfo, latest: dict[str, Any], finalizer: str) -> None:
        if not has_finalizer(latest, finalizer):
            return
        remaining = [f for f in metadata_of(latest).get("finalizers") or () if f != finalizer]
        await self._merge_patch(resource, latest, {"finalizers": remaining or None})

    async def _merge_patch(
        self, resource: ResourceInfo, latest: dict[str, Any], metadata: dict[str, Any]
    ) -> dict[str, Any] | None:
        meta = latest.get("metadata") or {}
        patch = {"metadata": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion"), **metadata}}
        try:
            return await self._client.patch(
                resource, str(meta.get("name")), patch, namespace=str(meta.get("namespace") or "") or None,
                patch_type="merge",
            )  # fmt: skip
        except NotFound:
            return None

    # -- events ---------------------------------------------------------------------------------

    def _report_invalid_namespace(self, node: Node, owner_uid: str) -> None:
        ref = node.reference_to(owner_uid)
        if ref is None:
            return
        invalid = ObjectReference.of_owner(ref, node.identity.namespace)
        self.events.warn(
            node.identity, "OwnerRefInvalidNamespace",
            f'ownerRef {invalid} does not exist in namespace "{node.identity.namespace}"', dedup=owner_uid,
        )  # fmt: skip

    def _report_cluster_scoped_dependent(self, node: Node, ref: dict[str, Any]) -> None:
        invalid = ObjectReference.of_owner(ref, "")
        self.events.warn(
            node.identity, "OwnerRefInvalidNamespace",
            f'ownerRef {invalid} does not exist in namespace "{node.identity.namespace}"', dedup=invalid.uid,
        )  # fmt: skip
