"""A simulated cluster for the kubelet, scheduler, volume and disruption tests.

The real server on a SQLite store in ``tmp_path``; every simulated-cluster controller
(:func:`kubeloop.controllers.add_simulated_cluster`) in a ``Manager`` in the test's loop, writing
through an :class:`InterceptedClient` (so tests count the controllers' writes); the test talks to the
API through its own client. One ``FakeClock`` for all. Polling is bounded in loop turns, never in
wall-clock time; time moves only when a test advances it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeloop.api import ApiError, NotFound, ResourceInfo
from kubeloop.client import Client
from kubeloop.controllers import (
    SimulatedCluster,
    SimulationOptions,
    add_builtin_controllers,
    add_simulated_cluster,
)
from kubeloop.controllers._scheduler_resources import NODES, PDBS, PODS, PVCS, PVS, builtin
from kubeloop.runtime import Manager, Request
from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock, InterceptedClient

__all__ = ["NODES", "NS", "PDBS", "PODS", "PVCS", "PVS", "World", "open_world", "pod"]

NS = "ns"
NAMESPACES = builtin("", "namespaces")


def pod(name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        cpu: str | None = None, restart: str = "Always", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "nginx:1.25"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    meta: dict[str, Any] = {"name": name, "labels": labels or {"app": "web"}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [container], "restartPolicy": restart, **spec}}


@dataclass
class World:
    client: Client
    ctl: InterceptedClient
    clock: FakeClock
    manager: Manager
    sim: SimulatedCluster
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def settle(self, turns: int = 40) -> None:
        for _ in range(turns):
            await asyncio.sleep(0.002)

    async def eventually(self, check: Callable[[], Awaitable[Any]], *, step: float = 0.0, tries: int = 500) -> Any:
        last: BaseException | None = None
        for _ in range(tries):
            try:
                result = await check()
                if result:
                    return result
                last = None
            except AssertionError as err:
                last = err
            await asyncio.sleep(0.004)
            if step:
                await self.clock.advance(step)
        if last is not None:
            raise last
        raise AssertionError("condition not reached")

    async def advance(self, seconds: float, *, turns: int = 10) -> None:
        """Move fake time in one step and let the controllers react."""
        await self.clock.advance(seconds)
        await self.settle(turns)

    async def get(self, resource: ResourceInfo, name: str, namespace: str | None = NS) -> dict[str, Any]:
        return await self.client.get(resource, name, namespace=namespace if resource.namespaced else None)

    async def maybe(self, resource: ResourceInfo, name: str, namespace: str | None = NS) -> dict[str, Any] | None:
        try:
            return await self.get(resource, name, namespace)
        except NotFound:
            return None

    async def create(self, resource: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create(resource, obj, namespace=NS if resource.namespaced else None)

    async def quiet_writes(self) -> int:
        """Writes the controllers make when every object is reconciled again and nothing changed."""
        await self.settle()
        self.ctl.reset()
        for controller in self.manager.controllers.values():
            for watch in controller.watches[:1]:
                for obj in watch.source.cache.list():  # type: ignore[attr-defined]
                    controller.enqueue(Request.for_object(obj))
        await self.settle(60)
        return len([w for w in self.ctl.writes if w.outcome == "ok"])


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return {}


@contextlib.asynccontextmanager
async def open_world(
    tmp_path: Path, options: SimulationOptions | None = None, *, workloads: bool = False
) -> AsyncIterator[World]:
    """The simulated cluster; ``workloads`` adds the ReplicaSet, Deployment and StatefulSet controllers
    through the built-in registry (as ``kubeloop controller-manager`` does)."""
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    app = create_app(store=store, clock=clock, rng=random.Random(7))
    await app.startup()
    client = Client.from_asgi(app, clock=clock)
    ctl = InterceptedClient(Client.from_asgi(app, clock=clock))
    manager = Manager(ctl, clock=clock, rng=random.Random(3))
    sim = add_simulated_cluster(manager, options)
    if workloads:
        add_builtin_controllers(manager, names=["replicaset", "deployment", "statefulset"])
    world = World(client, ctl, clock, manager, sim)
    with contextlib.suppress(ApiError):
        await client.create(NAMESPACES, {"metadata": {"name": NS}})
    world.tasks.append(asyncio.create_task(manager.run()))
    try:
        count = (options or SimulationOptions()).nodes

        async def registered() -> bool:
            nodes = (await client.list(NODES)).get("items") or []
            return len(nodes) >= count and all(condition(n, "Ready").get("status") for n in nodes)

        await world.eventually(registered)
        for controller in manager.controllers.values():
            await asyncio.wait_for(controller.synced.wait(), 10)
        yield world
    finally:
        for task in world.tasks:
            task.cancel()
        await asyncio.gather(*world.tasks, return_exceptions=True)
        await ctl.close()
        await client.close()
        await app.shutdown()
        await store.close()
