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
* :meth:`QuotaMonitors.listing` tells whether a monitor made less than :data:`LISTING_WINDOW` seconds ago
  (on the manager's clock) has not listed yet: the controller then counts again soon, so a delete between
  its count and the monitor's first list is not missed; past the window (a kind that cannot be listed) it
  stops asking.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from kubeloop.api import Clock, ResourceInfo
from kubeloop.client import NAMESPACE_ALL, Client
from kubeloop.runtime import InformerFactory, SharedInformer

__all__ = ["LISTING_WINDOW", "QuotaMonitors"]

LISTING_WINDOW = 60.0


class QuotaMonitors:
    """Informers for the counted kinds; add it to the manager as a runnable (it stops its own informers)."""

    def __init__(self, client: Client, shared: InformerFactory, *, clock: Clock, rng: random.Random) -> None:
        self._client = client
        self._shared = shared
        self._clock = clock
        self._rng = rng
        self._monitors: dict[tuple[str, str], tuple[SharedInformer, float]] = {}
        self._own: list[SharedInformer] = []

    def monitor(self, info: ResourceInfo, on_delete: Callable[[dict[str, Any]], None]) -> None:
        """Watch ``info``'s objects for deletes, if not watched yet."""
        key = (info.group, info.plural)
        if key in self._monitors:
            return
        informer = self._shared.existing(info) if self._shared.namespace in (None, NAMESPACE_ALL) else None
        if informer is None:
            informer = SharedInformer(self._client, info, namespace=NAMESPACE_ALL, clock=self._clock,
                                      rng=random.Random(self._rng.random()))
            self._own.append(informer)
            informer.start()
        informer.add_handler(on_delete=on_delete)
        self._monitors[key] = (informer, self._clock.monotonic())

    def listing(self, info: ResourceInfo) -> bool:
        """Whether the kind's monitor is recent and has not listed yet."""
        entry = self._monitors.get((info.group, info.plural))
        if entry is None:
            return False
        informer, since = entry
        return not informer.has_synced() and self._clock.monotonic() - since < LISTING_WINDOW

    async def run(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.gather(*(informer.stop() for informer in self._own), return_exceptions=True)
