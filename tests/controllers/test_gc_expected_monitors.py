"""The GC monitors the built-in kinds before its first discovery answers; discovery then decides.

Upstream's GC builds its monitors from discovery (k/k ``garbagecollector.go`` ``Sync`` ->
``GetDeletableResources`` -> ``resyncMonitors``). kubeloop starts the monitors of the kinds a server is
expected to serve (its built-in kinds) at once, so their lists run beside the manager's instead of
after discovery; the first sync keeps those discovery lists and stops the others, and the GC reports
synced only after that sync, for exactly discovery's deletable kinds. Discovery is held here by an ASGI
wrapper around the real server (faults by wrapping): nothing is mocked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

from kubeloop.api import BUILTIN_RESOURCES, ResourceInfo
from kubeloop.client import Client, Discovery
from kubeloop.controllers import GarbageCollector
from kubeloop.testing import FakeClock, InProcessCluster, owner_ref

from .conftest import CONFIGMAPS, SECRETS

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
DISCOVERY_PATHS = frozenset({"/api", "/apis"})
WIDGETS = ResourceInfo(group="example.com", version="v1", kind="Widget", plural="widgets", singular="widget",
                       namespaced=True)  # fmt: skip


class HeldDiscovery:
    """Passes every request to ``app``, except that ``/api`` and ``/apis`` wait until :meth:`release`."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.released = asyncio.Event()
        self.held = 0

    def release(self) -> None:
        self.released.set()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path") in DISCOVERY_PATHS and not self.released.is_set():
            self.held += 1
            await self.released.wait()
        await self._app(scope, receive, send)


class StaleGroup:
    """Passes every request to ``app``; while ``stale`` names a group, ``/apis`` answers it with every
    version's ``freshness: Stale`` (what an aggregated API server that cannot be reached produces), so
    the client's discovery reports that group/version as failed."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.stale = ""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("path") != "/apis" or not self.stale:
            await self._app(scope, receive, send)
            return
        plain = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"]}
        start: dict[str, Any] = {}
        body: list[bytes] = []

        async def capture(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                body.append(message.get("body", b""))

        await self._app(plain, receive, capture)
        doc = orjson.loads(b"".join(body))
        for item in doc.get("items") or ():
            if item["metadata"]["name"] == self.stale:
                for version in item["versions"]:
                    version["freshness"] = "Stale"
        out = orjson.dumps(doc)
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})


def _key(info: ResourceInfo) -> tuple[str, str, str]:
    return (info.group, info.version, info.plural)


async def _start(cluster: InProcessCluster, gc_client: Client, **kwargs: Any) -> GarbageCollector:
    gc = GarbageCollector(gc_client, clock=cluster.clock, workers=1, **kwargs)
    cluster.run_in_background(gc.run())
    return gc


async def test_built_in_kinds_are_listed_and_synced_while_discovery_has_not_answered(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as cluster:
        await cluster.create(CONFIGMAPS, "owner")
        held = HeldDiscovery(cluster.app)
        async with Client.from_asgi(held, clock=cluster.clock) as gc_client:
            gc = await _start(cluster, gc_client)

            async def monitors_synced_before_discovery() -> bool:
                own = gc.monitors.informers.get(_key(CONFIGMAPS))
                return held.held == 2 and own is not None and own[0].has_synced()

            await cluster.eventually(monitors_synced_before_discovery)
            expected = {_key(r) for r in gc.monitors.deletable(Discovery(BUILTIN_RESOURCES, BUILTIN_RESOURCES))}
            assert set(gc.monitors.informers) == expected
            own_configmaps = gc.monitors.informers[_key(CONFIGMAPS)][0]
            assert own_configmaps.cache.get_by_name("owner", "ns") is not None
            assert not gc.has_synced()  # not before its first discovery, as upstream

            held.release()

            async def synced() -> bool:
                return gc.has_synced()

            await cluster.eventually(synced)
            wanted = {_key(r) for r in gc.monitors.deletable(gc.monitors.discovery)}
            assert set(gc.monitors.informers) == wanted == expected
            # discovery confirmed the kind: the informer that listed it early is kept, not replaced
            assert gc.monitors.informers[_key(CONFIGMAPS)][0] is own_configmaps

            # and the GC collects through it
            owner = await cluster.client.get(CONFIGMAPS, "owner")
            await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
            await cluster.client.delete(CONFIGMAPS, "owner")
            await cluster.eventually(lambda: cluster.gone(SECRETS, "child"))


async def test_an_expected_kind_that_discovery_does_not_list_is_stopped_and_never_waited_for(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as cluster:
        held = HeldDiscovery(cluster.app)
        async with Client.from_asgi(held, clock=cluster.clock) as gc_client:
            gc = await _start(cluster, gc_client, expected_resources=(*BUILTIN_RESOURCES, WIDGETS))

            async def widgets_monitored() -> bool:
                return held.held == 2 and _key(WIDGETS) in gc.monitors.informers

            await cluster.eventually(widgets_monitored)
            widgets = gc.monitors.informers[_key(WIDGETS)][0]
            assert widgets.running and not widgets.has_synced()  # the server answers its list 404

            held.release()

            async def synced() -> bool:
                return gc.has_synced()

            await cluster.eventually(synced)
            assert _key(WIDGETS) not in gc.monitors.informers
            assert not widgets.running
            assert _key(CONFIGMAPS) in gc.monitors.informers


async def test_an_expected_kind_in_a_group_whose_discovery_failed_is_stopped_but_a_discovered_one_is_kept(
    tmp_path: Path,
) -> None:
    # Upstream keeps the monitors of a group whose discovery failed (GetDeletableResources tolerates partial
    # discovery), but only monitors discovery once listed: a provisional one is not kept on that ground.
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as cluster:
        stale = StaleGroup(cluster.app)
        stale.stale = "apps"
        async with Client.from_asgi(stale, clock=cluster.clock) as gc_client:
            gc = await _start(cluster, gc_client)

            async def synced() -> bool:
                return gc.has_synced()

            await cluster.eventually(synced)
            assert "apps/v1" in gc.monitors.discovery.failed
            assert not any(group == "apps" for group, _, _ in gc.monitors.informers)
            assert _key(CONFIGMAPS) in gc.monitors.informers

            stale.stale = ""  # apps discovered: monitored from the next sync on
            assert await gc.monitors.sync()
            assert ("apps", "v1", "replicasets") in gc.monitors.informers
            replicasets = gc.monitors.informers[("apps", "v1", "replicasets")][0]

            stale.stale = "apps"  # failing again: the monitors discovery listed before are kept
            assert await gc.monitors.sync()
            assert gc.monitors.informers[("apps", "v1", "replicasets")][0] is replicasets
            assert replicasets.running
