"""The garbage collector's monitors: one informer per deletable kind, kept in step with discovery.

Upstream (k/k ``garbagecollector/graph_builder.go`` ``syncMonitors``, ``garbagecollector.go``
``Sync``): the GC watches every resource the server's discovery lists with the verbs ``delete``,
``list`` and ``watch``, in its preferred version, except ``events`` (core and ``events.k8s.io``).

Guarantees of :class:`Monitors`:

* :meth:`sync` re-reads discovery, starts an informer for each new kind and stops those of kinds the
  server no longer serves (a deleted CRD). Custom resources are covered because discovery lists them.
* :meth:`start_expected` monitors, before the first discovery answers, the deletable kinds the server
  is expected to serve (the garbage collector passes kubeloop's built-in kinds), so their lists run
  beside the manager's instead of after discovery. They are provisional: the next :meth:`sync` keeps
  those discovery lists and stops the others, even in a group whose discovery failed, so the set that
  :meth:`wait_for_sync` waits for after the first sync is exactly upstream's (discovery's deletable
  resources; a monitor is only ever kept for a failed group once discovery has listed it).
* :meth:`run_resync` calls :meth:`sync` every ``resync_period`` seconds on the injected clock, and at
  once when :meth:`request_resync` is called (the collector calls it on every CRD event), so a new
  CRD's objects are garbage collected without waiting for the period.
* A discovery failure for some group/versions keeps the monitors of those groups unchanged
  (``GetDeletableResources`` tolerates partial discovery).
* :meth:`wait_for_sync` waits for the informers known at the time, at most ``sync_timeout``; since
  k8s 1.32 the GC goes on without monitors that cannot sync (their objects are invisible to it).
* :attr:`discovery` is the latest discovery, used as the RESTMapper (apiVersion + kind -> resource).
* Given ``shared`` (the manager's :class:`~kubeloop.runtime.InformerFactory`, watching every
  namespace), a kind some other controller already watches is monitored through that informer, as
  upstream's GC takes its monitors from the shared informer factory (``informerFactory.ForResource``):
  one list and one watch per kind, not two. The GC only adds and removes its handlers on those; it
  starts and stops its own informers for every other kind (custom resources included), so a kind that
  cannot sync never holds up the manager's informers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable
from typing import Any

from kubeloop.api import GC_IGNORED_RESOURCES, ApiError, Clock, ResourceInfo
from kubeloop.client import NAMESPACE_ALL, Client, Discovery, discover_resources, with_verbs
from kubeloop.runtime import HandlerRegistration, InformerFactory, SharedInformer

__all__ = ["IGNORED_RESOURCES", "Monitors"]

log = logging.getLogger("kubeloop.controllers.gc")

IGNORED_RESOURCES = GC_IGNORED_RESOURCES  # k/k garbagecollector.go DefaultIgnoredResources

ObjectHandler = Callable[[ResourceInfo], tuple[
    Callable[[dict[str, Any]], None], Callable[[dict[str, Any], dict[str, Any]], None], Callable[[dict[str, Any]], None]
]]


def _key(info: ResourceInfo) -> tuple[str, str, str]:
    return (info.group, info.version, info.plural)


class Monitors:
    def __init__(
        self,
        client: Client,
        handlers: ObjectHandler,
        *,
        clock: Clock,
        rng: random.Random,
        resync_period: float = 30.0,
        ignored: Iterable[tuple[str, str]] = IGNORED_RESOURCES,
        shared: InformerFactory | None = None,
    ) -> None:
        self._client = client
        self._shared = shared if shared is not None and shared.namespace in (None, NAMESPACE_ALL) else None
        self._handlers = handlers
        self._clock = clock
        self._rng = rng
        self.resync_period = resync_period
        self._ignored = frozenset(ignored)
        self.informers: dict[tuple[str, str, str], tuple[SharedInformer, HandlerRegistration]] = {}
        self._borrowed: set[tuple[str, str, str]] = set()  # keys whose informer is the shared factory's
        self._provisional: set[tuple[str, str, str]] = set()  # started by start_expected, not yet in discovery
        self.discovery = Discovery((), ())
        self._resync = asyncio.Event()
        self.on_crd_change: Callable[[], None] = self.request_resync

    def resource_for(self, api_version: str, kind: str) -> ResourceInfo | None:
        return self.discovery.by_kind(api_version, kind)

    def cached(self, resource: ResourceInfo, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as the kind's informer last saw it (shared: never mutate), ``None`` if not seen."""
        entry = self.informers.get(_key(resource))
        if entry is None:
            return None
        return entry[0].cache.get_by_name(name, namespace if resource.namespaced else None)

    def deletable(self, discovery: Discovery) -> list[ResourceInfo]:
        """``GetDeletableResources``: preferred versions with delete, list and watch, minus ignored."""
        return [
            r for r in with_verbs(discovery.preferred, "delete", "list", "watch")
            if (r.group, r.plural) not in self._ignored
        ]

    async def sync(self) -> bool:
        """Re-read discovery and add/remove informers; ``False`` if discovery could not be read at all."""
        try:
            discovery = await discover_resources(self._client)
        except ApiError as err:
            log.warning("garbage collector: discovery failed: %s", err.message)
            return False
        if discovery.failed:
            log.warning("garbage collector: %s", discovery.failure_message())
        self.discovery = discovery
        wanted = {_key(r): r for r in self.deletable(discovery)}
        failed_gvs = set(discovery.failed)
        for key in list(self.informers):
            group, version, _ = key
            gv = f"{group}/{version}" if group else version
            if key not in wanted and (gv not in failed_gvs or key in self._provisional):
                informer, registration = self.informers.pop(key)
                informer.remove_handler(registration)
                if key in self._borrowed:
                    self._borrowed.discard(key)
                else:
                    await informer.stop()
                log.info("garbage collector: stopped monitoring %s", informer.resource.group_resource)
        for key, info in wanted.items():
            if key not in self.informers:
                self._monitor(key, info)
        self._provisional.clear()
        return True

    def start_expected(self, resources: Iterable[ResourceInfo]) -> None:
        """Monitor now the deletable ``resources`` not monitored yet, until the next :meth:`sync`
        confirms them (a kind that discovery does not list is then stopped)."""
        discovery = Discovery(tuple(resources), tuple(resources))
        for info in self.deletable(discovery):
            key = _key(info)
            if key not in self.informers:
                self._monitor(key, info)
                self._provisional.add(key)

    def _monitor(self, key: tuple[str, str, str], info: ResourceInfo) -> None:
        crds = info.group == "apiextensions.k8s.io" and info.plural == "customresourcedefinitions"
        # (the CRD informer gets a second handler below, which only the GC's own informer drops)
        shared = self._shared.existing(info) if self._shared is not None and not crds else None
        informer = shared if shared is not None else SharedInformer(
            self._client, info, namespace=NAMESPACE_ALL, clock=self._clock, rng=random.Random(self._rng.random())
        )
        on_add, on_update, on_delete = self._handlers(info)
        registration = informer.add_handler(on_add, on_update, on_delete)
        if crds:
            informer.add_handler(
                lambda _o: self.on_crd_change(), lambda _o, _n: self.on_crd_change(), lambda _o: self.on_crd_change()
            )
        self.informers[key] = (informer, registration)
        if shared is None:
            informer.start()
        else:
            self._borrowed.add(key)  # the factory starts and stops it

    def request_resync(self) -> None:
        self._resync.set()

    def has_synced(self) -> bool:
        return all(i.has_synced() for i, _ in self.informers.values())

    async def wait_for_sync(self, timeout: float) -> bool:
        """Wait for the current informers, at most ``timeout`` seconds on the clock."""
        pending = [asyncio.ensure_future(i.wait_for_sync()) for i, _ in self.informers.values()]
        if not pending:
            return True
        timer: asyncio.Future[None] = asyncio.ensure_future(self._clock.sleep(timeout))
        everything: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*pending))
        try:
            await asyncio.wait({everything, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for f in (everything, timer, *pending):
                f.cancel()
            await asyncio.gather(everything, timer, *pending, return_exceptions=True)
        return self.has_synced()

    async def run_resync(self) -> None:
        """Re-discover every ``resync_period`` seconds, or at once when a resync is requested."""
        while True:
            sleeper = asyncio.ensure_future(self._clock.sleep(self.resync_period))
            waiter = asyncio.ensure_future(self._resync.wait())
            try:
                await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for f in (sleeper, waiter):
                    f.cancel()
                await asyncio.gather(sleeper, waiter, return_exceptions=True)
            self._resync.clear()
            await self.sync()

    async def stop(self) -> None:
        for key, (informer, registration) in self.informers.items():
            informer.remove_handler(registration)
            if key not in self._borrowed:
                with contextlib.suppress(Exception):
                    await informer.stop()
        self.informers.clear()
        self._borrowed.clear()
        self._provisional.clear()
