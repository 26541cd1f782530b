"""The resource quota controller's monitors of the kinds its quotas count beyond the ones it always watches.

Upstream's QuotaMonitor (k/k ``pkg/controller/resourcequota/resource_quota_monitor.go``) runs one informer per
quotable resource (``SyncMonitors`` over ``GetQuotableResources``), taken from the shared informer factory,
and turns each delete into a replenishment (``controllerFor``'s ``DeleteFunc``). Only the quotas whose
``status.hard`` the kind's evaluator tracks are ever synced by it (``replenishQuota``), so a kind no quota
counts needs no monitor: :class:`QuotaMonitors` starts one the first time a quota counts the kind.

Guarantees:

* :meth:`QuotaMonitors.monitor` gives the kind's informer with the delete handler added once: the
  manager's shared informer when some other controller already made one (one list and one watch per kind),
  else an informer of its own, started at once and stopped when :meth:`QuotaMonitors.run` ends (the
  manager's shutdown). Its own informers are not the manager's, so a kind that cannot be listed (a deleted
  CRD's) never holds up the manager's readiness or idleness.
* :meth:`QuotaMonitors.sync`, run every :data:`SYNC_PERIOD` seconds on the manager's clock by
  :meth:`QuotaMonitors.run` (kube-controller-manager's ``resourceQuotaController.Sync(ctx, discoveryFunc,
  30*time.Second)``), re-reads discovery and stops the monitors of kinds it no longer lists (a deleted
  CRD's), as ``SyncMonitors`` stops the monitors missing from the new resources: an informer of its own is
  stopped, a handler on the manager's shared informer is removed, and ``on_gone`` hears of each kind, so a
  kind served again later is monitored afresh. A discovery that fails, fails for some group/versions, or
  lists no resource at all stops nothing (k/k ``pkg/controller/resourcequota/resource_quota_controller.go``
  ``Sync``: a partial discovery keeps every old monitor, any other error or an empty list short-circuits).
* :meth:`QuotaMonitors.listing` tells whether a monitor made less than :data:`LISTING_WINDOW` seconds ago
  (on the manager's clock) has not listed yet: the controller then counts again soon, so a delete between
  its count and the monitor's first list is not missed; past the window (a kind that cannot be listed) it
  stops asking.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from kubeloop.api import ApiError, Clock, ResourceInfo
from kubeloop.client import NAMESPACE_ALL, Client, discover_resources
from kubeloop.runtime import HandlerRegistration, InformerFactory, SharedInformer

__all__ = ["LISTING_WINDOW", "SYNC_PERIOD", "QuotaMonitors"]

log = logging.getLogger("kubeloop.controllers.resourcequota")

LISTING_WINDOW = 60.0
SYNC_PERIOD = 30.0  # k/k cmd/kube-controller-manager/app/core.go: resourceQuotaController.Sync(ctx, ..., 30*time.Second)

Kind = tuple[str, str]  # (group, plural)


class QuotaMonitors:
    """Informers for the counted kinds; add it to the manager as a runnable (it stops its own informers)."""

    def __init__(
        self, client: Client, shared: InformerFactory, *, clock: Clock, rng: random.Random,
        on_gone: Callable[[Kind], None] = lambda _kind: None, sync_period: float = SYNC_PERIOD,
    ) -> None:
        self._client = client
        self._shared = shared
        self._clock = clock
        self._rng = rng
        self._on_gone = on_gone
        self.sync_period = sync_period
        self._monitors: dict[Kind, tuple[SharedInformer, HandlerRegistration, float]] = {}
        self._own: dict[Kind, SharedInformer] = {}

    def informer(self, kind: Kind) -> SharedInformer | None:
        """The informer monitoring ``kind`` now (the manager's shared one, or one of these monitors' own)."""
        entry = self._monitors.get(kind)
        return entry[0] if entry is not None else None

    def monitor(self, info: ResourceInfo, on_delete: Callable[[dict[str, Any]], None]) -> None:
        """Watch ``info``'s objects for deletes, if not watched yet."""
        key = (info.group, info.plural)
        if key in self._monitors:
            return
        informer = self._shared.existing(info) if self._shared.namespace in (None, NAMESPACE_ALL) else None
        if informer is None:
            informer = SharedInformer(self._client, info, namespace=NAMESPACE_ALL, clock=self._clock,
                                      rng=random.Random(self._rng.random()))
            self._own[key] = informer
            informer.start()
        registration = informer.add_handler(on_delete=on_delete)
        self._monitors[key] = (informer, registration, self._clock.monotonic())

    def listing(self, info: ResourceInfo) -> bool:
        """Whether the kind's monitor is recent and has not listed yet."""
        entry = self._monitors.get((info.group, info.plural))
        if entry is None:
            return False
        informer, _, since = entry
        return not informer.has_synced() and self._clock.monotonic() - since < LISTING_WINDOW

    async def sync(self) -> None:
        """Stop the monitors of the kinds discovery no longer lists (``SyncMonitors``' removal)."""
        if not self._monitors:
            return
        try:
            discovery = await discover_resources(self._client)
        except ApiError as error:
            log.warning("resource quota controller: discovery failed, monitors kept: %s", error.message)
            return
        if discovery.failed:
            log.warning("resource quota controller: monitors kept: %s", discovery.failure_message())
            return
        if not discovery.resources:  # upstream's short circuit: an empty list is a sign of a broken server
            log.warning("resource quota controller: discovery listed no resources, monitors kept")
            return
        served = {(r.group, r.plural) for r in discovery.resources}
        for key in [k for k in self._monitors if k not in served]:
            informer, registration, _ = self._monitors.pop(key)
            informer.remove_handler(registration)
            own = self._own.pop(key, None)
            if own is not None:
                await own.stop()
            log.info("resource quota controller: stopped monitoring %s", informer.resource.group_resource)
            self._on_gone(key)

    async def run(self) -> None:
        try:
            while True:
                await self._clock.sleep(self.sync_period)
                await self.sync()
        finally:
            await asyncio.gather(*(informer.stop() for informer in self._own.values()), return_exceptions=True)
