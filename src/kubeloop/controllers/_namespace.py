"""The namespace controller: empties a deleted namespace, then lets the server remove it.

Upstream: k/k ``pkg/controller/namespace/namespace_controller.go`` and
``deletion/namespaced_resources_deleter.go``; facts in controllers reference section 2.

* Only namespaces with ``deletionTimestamp`` are queued, each after ``deletion_grace_period``
  (upstream ``namespaceDeletionGracePeriod``, 5 s, so late creations become visible). The queue's
  rate limiter is MaxOf(per-item 5 ms..60 s, 10/s burst 100): a namespace is retried at least every
  minute.
* One pass (:meth:`NamespaceController.reconcile`): live GET; stop if gone or not being deleted;
  make sure ``status.phase`` is ``Terminating``; stop if ``spec.finalizers`` is already empty;
  delete all content; when nothing remains, remove this controller's token (``kubernetes``) from
  ``spec.finalizers`` with ``PUT .../finalize``, upon which the server removes the namespace.
* Deleting content: discovery of every namespaced resource with the ``delete`` verb (preferred
  versions; a partial discovery failure is recorded, not fatal). Pods go first and nothing else is
  deleted while pods remain (OrderedNamespaceDeletion, KEP-5080). Each resource is emptied with one
  DELETECOLLECTION, propagation Background (the server deletes its items concurrently, so they share
  durable commits); a resource without that verb (or answering 404/405) is listed and its objects
  deleted one by one, up to ``item_workers`` in flight. Resources are emptied one after the other in
  discovery order, as upstream does (a collection deleted together with its owners leaves the garbage
  collector less to race for). Then all are listed again, concurrently:
  objects kept by finalizers are counted per finalizer with an estimate of 15 s; pods still
  terminating gracefully give an estimate of their largest grace period minus the time since the
  namespace was deleted; anything else left is the error ``unexpected items still remain in
  namespace: NS for gvr: G/V, Resource=R``.
* Content remaining re-queues after ``estimate / 2 + 1`` seconds (``ResourcesRemainingError``);
  other errors re-queue with backoff. The namespace's conditions say what remains and which
  finalizers hold it (:mod:`kubeloop.controllers._namespace_conditions`), so a namespace stuck on
  a finalizer says so.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubeloop.api import (
    ApiError,
    Clock,
    Conflict,
    NotFound,
    ResourceInfo,
    SystemClock,
    is_being_deleted,
    parse_time,
)
from kubeloop.client import NAMESPACE_ALL, Client, discover_resources, with_verbs
from kubeloop.controllers._namespace_conditions import ConditionUpdater
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import (
    Controller,
    ItemExponential,
    MaxOf,
    Metrics,
    Request,
    SharedInformer,
    TokenBucket,
    TransientError,
)

__all__ = ["NamespaceController"]

log = logging.getLogger("kubeloop.controllers.namespace")

NAMESPACES = builtin("", "namespaces")
FINALIZER_ESTIMATE_SECONDS = 15  # namespaced_resources_deleter.go finalizerEstimateSeconds
_PODS = ("", "pods")


def _gvr(info: ResourceInfo) -> str:
    """Go's ``%v`` of a GroupVersionResource: ``/v1, Resource=pods``, ``apps/v1, Resource=deployments``."""
    return f"{info.group}/{info.version}, Resource={info.plural}"


class NamespaceController:
    def __init__(
        self,
        client: Client,
        *,
        informer: SharedInformer | None = None,
        clock: Clock | None = None,
        workers: int = 10,
        deletion_grace_period: float = 5.0,
        finalizer_token: str = "kubernetes",
        metrics: Metrics | None = None,
        item_workers: int = 32,
    ) -> None:
        self._client = client
        self.item_workers = item_workers
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._own_informer = informer is None
        self.informer = informer or SharedInformer(client, NAMESPACES, namespace=NAMESPACE_ALL, clock=self._clock)
        self.deletion_grace_period = deletion_grace_period
        self.finalizer_token = finalizer_token
        self.controller = Controller(
            "namespace", self.reconcile, max_concurrent_reconciles=workers, clock=self._clock, metrics=metrics,
            rate_limiter=MaxOf(ItemExponential(0.005, 60.0), TokenBucket(10.0, 100, clock=self._clock)),
        )  # fmt: skip
        self.synced = asyncio.Event()

    def has_synced(self) -> bool:
        return self.synced.is_set()

    def stop(self) -> None:
        """Finish the reconcile in hand and take no more (see :meth:`Controller.stop`)."""
        self.controller.stop()

    async def run(self) -> None:
        registration = self.informer.add_handler(self._enqueue, lambda _old, new: self._enqueue(new))
        try:
            if self._own_informer:
                self.informer.start()
            await self.informer.wait_for_sync()
            self.synced.set()
            await self.controller.run()
        finally:
            self.informer.remove_handler(registration)
            if self._own_informer:
                await self.informer.stop()

    def _enqueue(self, ns: dict[str, Any]) -> None:
        if is_being_deleted(ns):
            self.controller.queue.add_after(Request.for_object(ns), self.deletion_grace_period)

    # -- one pass ---------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> None:
        try:
            ns = await self._client.get(NAMESPACES, request.name)
        except NotFound:
            return
        if not is_being_deleted(ns):
            return
        ns = await self._ensure_terminating(ns)
        if not (ns.get("spec") or {}).get("finalizers"):
            return
        estimate = await self.delete_all_content(ns)
        if estimate > 0:
            raise TransientError(
                f"some content remains in the namespace, estimate {estimate} seconds before it is removed",
                retry_after=estimate // 2 + 1,
            )
        await self._finalize(ns)

    async def _ensure_terminating(self, ns: dict[str, Any]) -> dict[str, Any]:
        uid = ns["metadata"].get("uid")
        for _ in range(5):
            if (ns.get("status") or {}).get("phase") == "Terminating":
                return ns
            ns.setdefault("status", {})["phase"] = "Terminating"
            try:
                return await self._client.update(NAMESPACES, ns, subresource="status")
            except Conflict:
                ns = await self._client.get(NAMESPACES, ns["metadata"]["name"])
                if ns["metadata"].get("uid") != uid:
                    raise TransientError("the namespace was deleted and recreated") from None
        raise TransientError("conflicts while marking the namespace Terminating")

    async def _finalize(self, ns: dict[str, Any]) -> None:
        for _ in range(5):
            spec = ns.setdefault("spec", {})
            spec["finalizers"] = sorted({f for f in spec.get("finalizers") or () if f != self.finalizer_token})
            try:
                await self._client.update(NAMESPACES, ns, subresource="finalize")
                return
            except NotFound:
                return
            except Conflict:
                ns = await self._client.get(NAMESPACES, ns["metadata"]["name"])
        raise TransientError("conflicts while finalizing the namespace")

    async def delete_all_content(self, ns: dict[str, Any]) -> int:
        """``deleteAllContent``: the estimate in seconds (0: nothing remains); errors raise after conditions."""
        name = ns["metadata"]["name"]
        deleted_at = parse_time(ns["metadata"]["deletionTimestamp"])
        updater = ConditionUpdater(self._clock)
        errors: list[str] = []
        resources: list[ResourceInfo] = []
        try:
            discovery = await discover_resources(self._client)
        except ApiError as err:
            errors.append(err.message)
            updater.discovery_failed(err.message)
        else:
            if discovery.failed:
                errors.append(discovery.failure_message())
                updater.discovery_failed(discovery.failure_message(), failing_groups=len(discovery.failed))
            resources = [r for r in with_verbs(discovery.preferred, "delete") if r.namespaced]
        estimate = 0
        by_resource: dict[str, int] = {}
        by_finalizer: dict[str, int] = {}
        pods = [r for r in resources if (r.group, r.plural) == _PODS]
        rest = [r for r in resources if (r.group, r.plural) != _PODS]
        for batch in (pods, rest):
            # One resource after another, as upstream's deleteAllContent: a collection deleted together
            # with its owners leaves the garbage collector little to race for. Then the checks of what
            # remains, all at once.
            emptied: list[int | BaseException] = []
            for info in batch:
                try:
                    emptied.append(await self._empty(info, name, deleted_at))
                except ApiError as err:
                    emptied.append(err)
            outcomes = await asyncio.gather(*(self._remaining(info, name, e) for info, e in zip(batch, emptied, strict=True)),
                                            return_exceptions=True)
            for info, outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, ApiError):
                    errors.append(outcome.message)
                    updater.content_error(outcome.message)
                    continue
                finalizers: dict[str, int] = {}
                if isinstance(outcome, _Remaining):
                    kind_estimate, remaining = outcome.estimate, outcome.remaining
                    errors.append(str(outcome))
                    updater.content_error(str(outcome))
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    kind_estimate, remaining, finalizers = outcome
                estimate = max(estimate, kind_estimate)
                if remaining:
                    by_resource[f"{info.plural}.{info.group}"] = remaining
                    for f, n in finalizers.items():
                        by_finalizer[f] = by_finalizer.get(f, 0) + n
            if batch is pods and by_resource:
                break  # nothing else is deleted while pods remain
        updater.content_totals(by_resource, by_finalizer)
        if updater.update(ns.setdefault("status", {})):
            try:
                updated = await self._client.update(NAMESPACES, ns, subresource="status")
                ns["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]
            except ApiError as err:
                log.warning("namespace %s: cannot update status conditions: %s", name, err.message)
        if errors:
            raise RuntimeError("; ".join(errors))
        return estimate

    async def _empty(self, info: ResourceInfo, namespace: str, deleted_at: float) -> int:
        """Delete every object of one resource; for pods, the grace estimate taken before (else 0)."""
        estimate = 0
        if (info.group, info.plural) == _PODS:
            estimate = await self._pod_grace_estimate(info, namespace)
            if self._clock.now() - deleted_at >= estimate:
                estimate = 0
        if not await self._delete_collection(info, namespace):
            await self._delete_each_item(info, namespace)
        return estimate

    async def _remaining(
        self, info: ResourceInfo, namespace: str, emptied: int | BaseException
    ) -> tuple[int, int, dict[str, int]]:
        """The rest of ``deleteAllContentForGroupVersionResource``: (estimate, remaining, remaining per finalizer)."""
        if isinstance(emptied, BaseException):
            raise emptied
        estimate = emptied
        if "list" not in info.verbs:
            return estimate, 0, {}
        items, _ = await self._client.list_all(info, namespace=namespace)
        if not items:
            return 0, 0, {}
        finalizers: dict[str, int] = {}
        for item in items:
            for f in (item.get("metadata") or {}).get("finalizers") or ():
                finalizers[f] = finalizers.get(f, 0) + 1
        if estimate:
            return estimate, len(items), finalizers
        if finalizers:
            return FINALIZER_ESTIMATE_SECONDS, len(items), finalizers
        raise _Remaining(
            f"unexpected items still remain in namespace: {namespace} for gvr: {_gvr(info)}", estimate, len(items)
        )

    async def _delete_collection(self, info: ResourceInfo, namespace: str) -> bool:
        """``deleteCollection``: one DELETECOLLECTION; ``False`` when the resource does not support it."""
        if "deletecollection" not in info.verbs:
            return False
        try:
            await self._client.delete_collection(info, namespace=namespace, propagation_policy="Background")
        except ApiError as err:
            if err.code in (404, 405):  # IsNotFound / IsMethodNotSupported: fall back to one by one
                return False
            raise
        return True

    async def _delete_each_item(self, info: ResourceInfo, namespace: str) -> None:
        """``listCollection`` + ``deleteEachItem``, with up to ``item_workers`` deletes in flight."""
        if "list" not in info.verbs:
            return
        items, _ = await self._client.list_all(info, namespace=namespace)
        gate = asyncio.Semaphore(self.item_workers)

        async def one(name: str) -> None:
            async with gate:
                try:
                    await self._client.delete(info, name, namespace=namespace, propagation_policy="Background")
                except ApiError as err:
                    if err.code not in (404, 405):
                        raise

        outcomes = await asyncio.gather(*(one(str(i["metadata"]["name"])) for i in items), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _pod_grace_estimate(self, info: ResourceInfo, namespace: str) -> int:
        items, _ = await self._client.list_all(info, namespace=namespace)
        estimate = 0
        for pod in items:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and grace > estimate:
                estimate = grace
        return estimate


class _Remaining(Exception):
    def __init__(self, message: str, estimate: int, remaining: int) -> None:
        super().__init__(message)
        self.estimate = estimate
        self.remaining = remaining
