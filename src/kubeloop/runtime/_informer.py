"""Shared informers: one reflector and one cache per watched set, any number of event handlers.

:class:`SharedInformer` (client-go ``sharedIndexInformer``) owns a :class:`~kubeloop.runtime.Reflector`
and a :class:`~kubeloop.runtime.Cache`. It turns the reflector's replace/event stream into
``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)`` calls:

* On the first list, each item is an add; on a relist (after a 410 or an error) the new list is
  diffed against the cache: new keys are adds, keys whose resourceVersion changed are updates,
  vanished keys are deletes (with the last object known), so handlers never miss a change.
* Watch events update the cache *before* handlers run, so a handler that reads the cache sees the
  new state. Handlers run synchronously in event order; one that raises is logged and does not
  stop the others or the informer.
* A handler added after the cache has synced is first told about every cached object as an add
  (client-go replays existing items to late registrations).
* :meth:`has_synced` is true once the first list has been delivered; :meth:`wait_for_sync` waits
  for it.

:class:`InformerFactory` (client-go ``SharedInformerFactory``) hands out one informer per
(resource, namespace, selectors), so N controllers watching a kind cost one list and one watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api import Clock, ResourceInfo, SystemClock
from kubeloop.client import Client, WatchEvent
from kubeloop.runtime._cache import Cache, IndexFunc, object_key
from kubeloop.runtime._reflector import Reflector

__all__ = ["HandlerRegistration", "InformerFactory", "SharedInformer"]

log = logging.getLogger("kubeloop.runtime.informer")

OnAdd = Callable[[dict[str, Any]], None]
OnUpdate = Callable[[dict[str, Any], dict[str, Any]], None]
OnDelete = Callable[[dict[str, Any]], None]


def _ignore(*_: Any) -> None:
    return None


@dataclass(frozen=True, eq=False)
class HandlerRegistration:
    """Returned by :meth:`SharedInformer.add_handler`; pass it to ``remove_handler``."""

    on_add: OnAdd
    on_update: OnUpdate
    on_delete: OnDelete


_ON_ADD = operator.attrgetter("on_add")
_ON_UPDATE = operator.attrgetter("on_update")
_ON_DELETE = operator.attrgetter("on_delete")


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class SharedInformer:
    def __init__(
        self,
        client: Client,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.resource = resource
        self.cache = Cache(indexers=indexers)
        self.reflector = Reflector(
            client, resource, self, namespace=namespace, label_selector=label_selector,
            field_selector=field_selector, clock=clock or SystemClock(), rng=rng,
        )
        self._handlers: list[HandlerRegistration] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- handlers ---------------------------------------------------------------------------------

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
    ) -> HandlerRegistration:
        reg = HandlerRegistration(on_add or _ignore, on_update or _ignore, on_delete or _ignore)
        self._handlers.append(reg)
        if self.has_synced():
            for obj in self.cache.list():
                self._call(reg.on_add, obj)
        return reg

    def remove_handler(self, registration: HandlerRegistration) -> None:
        with contextlib.suppress(ValueError):
            self._handlers.remove(registration)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.cache.add_indexers(indexers)

    # -- lifecycle --------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the reflector in a task (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.reflector.run(), name=f"informer {self.resource.group_resource}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        """Run in the caller's task until cancelled."""
        await self.reflector.run()

    # -- ReflectorSink ----------------------------------------------------------------------------

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        old = {object_key(o): o for o in self.cache.list()}
        self.cache.replace(items)
        for obj in items:
            previous = old.pop(object_key(obj), None)
            if previous is None:
                self._dispatch(_ON_ADD, obj)
            elif _rv(previous) != _rv(obj):
                self._dispatch(_ON_UPDATE, previous, obj)
        for gone in old.values():
            self._dispatch(_ON_DELETE, gone)
        self._synced.set()

    def apply(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "DELETED":
            # The event carries the last state (with the deletion's resourceVersion): hand that on.
            self.cache.delete(obj)
            self._dispatch(_ON_DELETE, obj)
            return
        previous = self.cache.upsert(obj)
        if previous is None:
            self._dispatch(_ON_ADD, obj)
        else:
            self._dispatch(_ON_UPDATE, previous, obj)

    def _dispatch(self, pick: Callable[[HandlerRegistration], Callable[..., None]], *objs: dict[str, Any]) -> None:
        for reg in list(self._handlers):  # a copy: a handler may remove itself
            self._call(pick(reg), *objs)

    def _call(self, fn: Callable[..., None], *objs: dict[str, Any]) -> None:
        try:
            fn(*objs)
        except Exception:
            log.exception("%s: event handler failed", self.resource.group_resource)


class InformerFactory:
    """One shared informer per (resource, namespace, label selector, field selector)."""

    def __init__(
        self,
        client: Client,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._informers: dict[tuple[Any, ...], SharedInformer] = {}
        self._started = False

    def informer(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> SharedInformer:
        """The shared informer for this watch; created on first use, started if the factory runs."""
        ns = namespace if namespace is not None else self._namespace
        key = (resource.group, resource.version, resource.plural, ns, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(
                self._client, resource, namespace=ns, label_selector=label_selector,
                field_selector=field_selector, clock=self._clock, rng=random.Random(self._rng.random()),
            )
            self._informers[key] = informer
            if self._started:
                informer.start()
        return informer

    def existing(self, resource: ResourceInfo) -> SharedInformer | None:
        """The informer already made for ``resource`` in the factory's namespace, without selectors;
        ``None`` if nobody asked for one (this never creates one)."""
        return self._informers.get((resource.group, resource.version, resource.plural, self._namespace, None, None))

    @property
    def namespace(self) -> str | None:
        """The namespace informers watch unless told otherwise (``None``: every namespace)."""
        return self._namespace

    @property
    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.start()

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    async def wait_for_sync(self) -> None:
        await asyncio.gather(*(i.wait_for_sync() for i in self._informers.values()))

    async def stop(self) -> None:
        self._started = False
        await asyncio.gather(*(i.stop() for i in self._informers.values()))
