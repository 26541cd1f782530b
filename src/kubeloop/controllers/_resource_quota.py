"""The resource quota controller: each ResourceQuota's ``status`` is its ``spec.hard`` and what the namespace uses.

Mirrors k/k ``pkg/controller/resourcequota/resource_quota_controller.go`` (``syncResourceQuota``) and
``resource_quota_monitor.go`` (kube-controller-manager's ``resourcequota``), counting as the admission
plugin does (:mod:`kubeloop.api._quota_evaluators`, upstream's ``quota.CalculateUsage``):

- **Sync** of one quota: ``status.hard`` becomes ``spec.hard``; for every resource of ``spec.hard`` an
  evaluator tracks (pods' compute and counts, services, claims, ``configmaps``/``secrets``/
  ``resourcequotas``, ``count/<resource>[.<group>]``), the objects of that kind in the namespace are
  listed and the usage of those the quota's scopes match is summed (zero when there are none);
  ``status.used`` is the previous ``used`` with those sums in it, restricted to the hard names. The
  status is written (``/status``, conditional on the cached ``resourceVersion``) only when ``hard`` or
  ``used`` changed. A resource no API serves is left out of ``used``. A 409 is retried.
- **When**: a quota is added, or its ``spec.hard`` changes (a status write alone wakes nothing); an
  object is deleted, a pod becomes terminal (``QuotaV1Pod`` turns false), a service changes type, a
  claim's storage request changes: every quota of that namespace that tracks the kind is synced again
  (the monitors' replenishment, ``resource_quota_monitor.go`` ``controllerFor``: updates of pods,
  services and claims only, deletes of every kind). Upstream monitors every quotable resource
  discovery lists (``GetQuotableResources``: namespaced, with create, list, watch and delete), and
  replenishment only ever syncs a quota whose ``status.hard`` the kind's evaluator tracks
  (``replenishQuota``), so a kind no quota tracks is never looked at. Here pods, services, claims,
  ConfigMaps, Secrets, ReplicationControllers and ResourceQuotas (a deleted quota replenishes the
  namespace's ``resourcequotas`` count) are watched from the start, and the kind of any other
  ``count/<resource>[.<group>]`` a quota tracks (a Deployment, a Job, a custom resource) from that
  quota's first sync on (:mod:`kubeloop.controllers._quota_monitors`), until discovery stops listing
  it (a deleted CRD's kind: its monitor is stopped within 30 s, and the kind looked up afresh). A sync is repeated
  :data:`MONITOR_SYNC_RETRY` seconds later while a monitor it started has not listed yet, so a delete
  between the count and the monitor's list is not missed. Every quota is also recounted :data:`RESYNC_PERIOD` after its last sync (``--resource-quota-sync-period``, 5m),
  on the manager's clock, which catches a charge left by a write that failed after admission.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import BUILTIN_RESOURCES, Conflict, NotFound, ResourceInfo
from kubeloop.api._quota_evaluators import matching_resources, pod_is_counted, scopes_match, usage
from kubeloop.api._quota_math import ZERO, ResourceList, add, equals, mask, parse_list, render
from kubeloop.client import discover_resources
from kubeloop.controllers._quota_monitors import QuotaMonitors
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import (
    Controller,
    EnqueueForObject,
    Event,
    Manager,
    Request,
    Result,
    SharedInformer,
    TransientError,
    Watch,
)

__all__ = ["MONITOR_SYNC_RETRY", "QUOTAS", "RESYNC_PERIOD", "ResourceQuotaController", "resources_to_count"]

QUOTAS = builtin("", "resourcequotas")
RESYNC_PERIOD = 300.0  # kube-controller-manager --resource-quota-sync-period (5m0s)
MONITOR_SYNC_RETRY = 1.0  # a sync that started a monitor is redone this soon, until the monitor has listed
FIELD_MANAGER = "resourcequota-controller"
# The kinds watched from the start (the evaluators of registry.go, the legacy object-count aliases, and
# the quotas themselves, whose own watch also enqueues them); any other kind a quota counts is watched
# from that quota's first sync on (_monitor).
_REPLENISHED = (("", "pods"), ("", "services"), ("", "persistentvolumeclaims"), ("", "configmaps"), ("", "secrets"),
               ("", "replicationcontrollers"))
_ALIASES = {"configmaps": ("", "configmaps"), "secrets": ("", "secrets"), "resourcequotas": ("", "resourcequotas"),
            "replicationcontrollers": ("", "replicationcontrollers")}
Obj = Mapping[str, Any]


def resources_to_count(hard: Iterable[str]) -> dict[tuple[str, str], list[str]]:
    """(group, plural) -> the names of ``hard`` its evaluator tracks, for every kind a quota needs counted."""
    names = list(hard)
    kinds: dict[tuple[str, str], None] = {("", "pods"): None, ("", "services"): None,
                                          ("", "persistentvolumeclaims"): None}
    for name in names:
        if name in _ALIASES:
            kinds[_ALIASES[name]] = None
        elif name.startswith("count/"):
            plural, _, group = name[len("count/"):].partition(".")
            kinds[(group, plural)] = None
    out: dict[tuple[str, str], list[str]] = {}
    for group, plural in kinds:
        matched = matching_resources(group, plural, names)
        if matched:
            out[(group, plural)] = matched
    return out


def _quota_service_type(service: Obj | None) -> str:
    """GetQuotaServiceType: what a service counts as (NodePort, LoadBalancer, or nothing)."""
    kind = ((service or {}).get("spec") or {}).get("type")
    return kind if kind in ("NodePort", "LoadBalancer") else ""


def _claim_storage(claim: Obj | None) -> Any:
    return ((((claim or {}).get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


class ResourceQuotaController:
    """Keeps every ResourceQuota's status counted. Add :attr:`controller` to a manager."""

    name = "resourcequota"

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.clock = manager.clock
        self.quotas: SharedInformer = manager.informer(QUOTAS)
        watches = [Watch(self.quotas, EnqueueForObject(), predicates=(self._hard_changed,))]
        for group, plural in _REPLENISHED:
            info = builtin(group, plural)
            watches.append(Watch(manager.informer(info), _Replenish(self, info)))
        # A deleted quota frees a unit of the namespace's "resourcequotas" count (registry.go's alias).
        watches.append(Watch(self.quotas, _Replenish(self, QUOTAS)))
        self._watched = frozenset((*_REPLENISHED, ("", "resourcequotas")))
        self._served: dict[tuple[str, str], ResourceInfo] = {(i.group, i.plural): i for i in BUILTIN_RESOURCES}
        self.monitors = QuotaMonitors(manager.client, manager.informers, clock=manager.clock,
                                      rng=random.Random(manager.rng.random()), on_gone=self._forget)
        manager.add(self.monitors, needs_leader_election=True)
        self.controller = Controller(self.name, self.reconcile, watches=watches, clock=manager.clock,
                                     metrics=manager.metrics)

    @staticmethod
    def _hard_changed(event: Event) -> bool:
        """addQuota on add; on update only when ``spec.hard`` changed (our own status writes wake nothing)."""
        if event.type == "create":
            return True
        if event.type != "update" or event.old_object is None:
            return False
        return equals(parse_list((event.object.get("spec") or {}).get("hard")),
                      parse_list((event.old_object.get("spec") or {}).get("hard"))) is False

    def replenish(self, namespace: str, group: str, plural: str) -> list[Request]:
        """The quotas of ``namespace`` whose ``status.hard`` names something of that kind (replenishQuota)."""
        found = []
        for quota in self.quotas.cache.list(namespace=namespace):
            hard = (quota.get("status") or {}).get("hard") or {}
            if matching_resources(group, plural, hard):
                found.append(Request.for_object(quota))
        return found

    async def reconcile(self, request: Request) -> Result | None:
        quota = self.quotas.cache.get_by_name(request.name, request.namespace)
        if quota is None:
            return None
        spec_hard = parse_list((quota.get("spec") or {}).get("hard"))
        status = quota.get("status") or {}
        previous = parse_list(status.get("used"))
        counted_kinds = await self._counted_kinds(list(spec_hard))
        for info in counted_kinds:
            self._monitor(info)
        counted = await self._usage(request.namespace, quota, list(spec_hard))
        used = mask({**previous, **counted}, spec_hard)
        dirty = not equals(spec_hard, parse_list(status.get("hard"))) or not equals(used, previous)
        dirty = dirty or set(status.get("used") or {}) != set(used)
        if dirty:
            body = {**quota, "status": {"hard": render(spec_hard), "used": render(used)}}
            try:
                await self.client.update(QUOTAS, body, subresource="status", field_manager=FIELD_MANAGER)
            except NotFound:
                return None
            except Conflict as error:
                raise TransientError(f"{request} changed meanwhile: {error}") from error
        # A monitor that has not listed yet may miss a delete that came after the count: count again soon.
        pending = any(self.monitors.listing(info) for info in counted_kinds)
        return Result(requeue_after=MONITOR_SYNC_RETRY if pending else RESYNC_PERIOD)

    async def _counted_kinds(self, hard: list[str]) -> list[ResourceInfo]:
        """The served, namespaced kinds whose evaluators track some of ``hard``."""
        kinds = []
        for group, plural in resources_to_count(hard):
            info = await self._resource(group, plural)
            if info is not None:
                kinds.append(info)
        return kinds

    def _monitor(self, info: ResourceInfo) -> None:
        """Replenish on deletes of a counted kind not watched from the start (``QuotaMonitor.controllerFor``)."""
        if (info.group, info.plural) in self._watched:
            return
        replenish = _Replenish(self, info)

        def on_delete(obj: dict[str, Any]) -> None:
            for request in replenish.requests(Event("delete", obj)):
                self.controller.queue.add(request)

        self.monitors.monitor(info, on_delete)

    async def _usage(self, namespace: str, quota: Obj, hard: list[str]) -> ResourceList:
        """CalculateUsage: for each kind that tracks some of ``hard``, the sum over its matching objects."""
        total: ResourceList = {}
        now = self.clock.now()
        for (group, plural), tracked in resources_to_count(hard).items():
            info = await self._resource(group, plural)
            if info is None:
                continue  # nothing serves it: no evaluator upstream either
            try:
                items, _ = await self.client.list_all(info, namespace=namespace)
            except NotFound:
                continue
            stats: ResourceList = dict.fromkeys(tracked, ZERO)
            for item in items:
                if scopes_match(quota, group, plural, item):
                    stats = add(stats, usage(group, plural, item, now))
            total = add(total, mask(stats, tracked))
        return total

    def _forget(self, kind: tuple[str, str]) -> None:
        """A kind discovery stopped listing: looked up again when next counted (it may come back changed)."""
        self._served.pop(kind, None)

    async def _resource(self, group: str, plural: str) -> ResourceInfo | None:
        info = self._served.get((group, plural))
        if info is None:
            discovery = await discover_resources(self.client)
            for served in discovery.preferred:
                self._served.setdefault((served.group, served.plural), served)
            info = self._served.get((group, plural))
        return info if info is not None and info.namespaced else None


class _Replenish:
    """A monitor's events as quota syncs: deletes, and the updates that can lower usage."""

    def __init__(self, controller: ResourceQuotaController, info: ResourceInfo) -> None:
        self._controller = controller
        self._group, self._plural = info.group, info.plural

    def requests(self, event: Event) -> Iterable[Request]:
        obj, old = event.object, event.old_object
        if event.type == "update":
            if self._plural == "pods":
                now = self._controller.clock.now()
                notify = old is not None and pod_is_counted(old, now) and not pod_is_counted(obj, now)
            elif self._plural == "services":
                notify = _quota_service_type(old) != _quota_service_type(obj)
            elif self._plural == "persistentvolumeclaims":
                notify = _claim_storage(old) != _claim_storage(obj)
            else:
                notify = False
        else:
            notify = event.type == "delete"
        if not notify:
            return ()
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        return self._controller.replenish(namespace, self._group, self._plural)
