"""In-process cluster for controller tests: the real server on a SQLite store in ``tmp_path``, the real
client reaching it through ASGI, a ``FakeClock`` shared by both, and :func:`eventually` to await
convergence (bounded in loop iterations, never in wall-clock time).

``run_in_background(coro)`` starts a controller in the test's loop and cancels it at teardown, so no
task leaks.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import ApiError, KindRegistry, NotFound, ResourceInfo
from kubeloop.client import Client
from kubeloop.controllers import GarbageCollector
from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()


def kind(group: str, name: str) -> ResourceInfo:
    info = KINDS.by_kind(group, name)
    assert info is not None
    return info


NAMESPACES = kind("", "Namespace")
CONFIGMAPS = kind("", "ConfigMap")
SECRETS = kind("", "Secret")
PODS = kind("", "Pod")
EVENTS = kind("", "Event")
NODES = kind("", "Node")
DEPLOYMENTS = kind("apps", "Deployment")
REPLICASETS = kind("apps", "ReplicaSet")
CRDS = kind("apiextensions.k8s.io", "CustomResourceDefinition")


async def eventually(
    check: Callable[[], Awaitable[Any]], *, clock: FakeClock | None = None, step: float = 0.05, tries: int = 2000
) -> Any:
    """Poll ``check`` until it returns a truthy value (or stops raising AssertionError).

    Each try yields to the loop; with ``clock`` it also advances fake time by ``step`` so queued
    backoffs (5 ms, 10 ms, ...) come due. Fails after ``tries`` polls, not after a wall-clock bound.
    """
    last: BaseException | None = None
    for _ in range(tries):
        try:
            result = await check()
            if result:
                return result
            last = None
        except AssertionError as err:
            last = err
        for _ in range(3):
            await asyncio.sleep(0)
        if clock is not None:
            await clock.advance(step)
    if last is not None:
        raise last
    raise AssertionError("condition not reached")


async def get_or_none(client: Client, resource: ResourceInfo, name: str, namespace: str | None = None) -> Any:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFound:
        return None


def owner_ref(owner: dict[str, Any], *, controller: bool = False, block: bool | None = None) -> dict[str, Any]:
    meta = owner["metadata"]
    ref: dict[str, Any] = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
                           "uid": meta["uid"]}
    if controller:
        ref["controller"] = True
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


@dataclass
class Cluster:
    client: Client
    clock: FakeClock
    app: Any = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)

    def open_client(self, cls: type[Client] = Client) -> Any:
        """Another client of the same server (e.g. a ``Client`` subclass that injects a fault)."""
        c = cls.from_asgi(self.app, clock=self.clock)
        self.clients.append(c)
        return c

    def run_in_background(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.append(task)
        return task

    async def create(self, resource: ResourceInfo, name: str, *, namespace: str | None = "ns",
                     owners: list[dict[str, Any]] | None = None, finalizers: list[str] | None = None,
                     **body: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if owners:
            meta["ownerReferences"] = owners
        if finalizers:
            meta["finalizers"] = finalizers
        obj = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta, **body}
        created = await self.client.create(resource, obj, namespace=namespace if resource.namespaced else None)
        created.setdefault("apiVersion", resource.api_version)
        created.setdefault("kind", resource.kind)
        return created

    async def exists(self, resource: ResourceInfo, name: str, namespace: str | None = "ns") -> bool:
        return await get_or_none(self.client, resource, name, namespace) is not None

    async def gone(self, resource: ResourceInfo, name: str, namespace: str | None = "ns") -> bool:
        return not await self.exists(resource, name, namespace)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    app = create_app(store=store, clock=clock, rng=random.Random(7))
    await app.startup()
    client = Client.from_asgi(app, clock=clock)
    c = Cluster(client, clock, app)
    try:
        with contextlib.suppress(ApiError):
            await client.create(NAMESPACES, {"metadata": {"name": "ns"}})
        yield c
    finally:
        for task in c.tasks:
            task.cancel()
        await asyncio.gather(*c.tasks, return_exceptions=True)
        for other in c.clients:
            await other.close()
        await client.close()
        await app.shutdown()
        await store.close()


async def start_gc(cluster: Cluster, client: Client | None = None) -> GarbageCollector:
    gc = GarbageCollector(client or cluster.client, clock=cluster.clock, workers=2)
    cluster.run_in_background(gc.run())

    async def synced() -> bool:
        return gc.has_synced()

    await eventually(synced, clock=cluster.clock)
    return gc


async def settle(gc: GarbageCollector, cluster: Cluster) -> None:
    """Wait until both GC queues are idle (nothing queued, in flight or waiting for a retry)."""

    async def idle() -> bool:
        return gc.idle()

    await eventually(idle, clock=cluster.clock)
