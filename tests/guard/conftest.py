"""An in-process cluster for the guard tools: the real server on SQLite, the real client over ASGI,
the real garbage collector (on a ``FakeClock``), and helpers to build owner chains by hand (the
workload controllers are not needed: ownerReferences are written directly, as the issue asks).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import KindRegistry, NotFound, ResourceInfo
from kubeloop.client import Client
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
PODS = kind("", "Pod")
PVCS = kind("", "PersistentVolumeClaim")
PVS = kind("", "PersistentVolume")
DEPLOYMENTS = kind("apps", "Deployment")
REPLICASETS = kind("apps", "ReplicaSet")
STATEFULSETS = kind("apps", "StatefulSet")
CLUSTERROLES = kind("rbac.authorization.k8s.io", "ClusterRole")

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
SPECS: dict[str, dict[str, Any]] = {
    "Deployment": {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
    "ReplicaSet": {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
    "Pod": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
}


def owner_ref(owner: dict[str, Any], *, block: bool = True, controller: bool = True) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": controller, "blockOwnerDeletion": block}


@dataclass
class Cluster:
    client: Client
    clock: FakeClock
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    async def make(self, resource: ResourceInfo, name: str, *, namespace: str | None = "prod",
                   owners: list[dict[str, Any]] | None = None, finalizers: list[str] | None = None,
                   annotations: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if owners:
            meta["ownerReferences"] = owners
        if finalizers:
            meta["finalizers"] = finalizers
        if annotations:
            meta["annotations"] = annotations
        obj = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta,
               **SPECS.get(resource.kind, {}), **body}
        created = await self.client.create(resource, obj, namespace=namespace if resource.namespaced else None)
        created.setdefault("apiVersion", resource.api_version)
        created.setdefault("kind", resource.kind)
        return created

    async def deployment_chain(self, name: str = "web", pods: int = 3) -> dict[str, Any]:
        dep = await self.make(DEPLOYMENTS, name)
        rs = await self.make(REPLICASETS, f"{name}-1", owners=[owner_ref(dep)])
        for i in range(pods):
            await self.make(PODS, f"{name}-1-{i}", owners=[owner_ref(rs)])
        return dep

    async def uids(self) -> set[str]:
        """Every object uid in the cluster (the kinds these tests use)."""
        out: set[str] = set()
        for info in (NAMESPACES, CONFIGMAPS, PODS, PVCS, PVS, DEPLOYMENTS, REPLICASETS, STATEFULSETS, CLUSTERROLES):
            items, _ = await self.client.list_all(info, namespace="")
            out |= {i["metadata"]["uid"] for i in items}
        return out

    async def get(self, resource: ResourceInfo, name: str, namespace: str | None = "prod") -> Any:
        try:
            return await self.client.get(resource, name, namespace=namespace)
        except NotFound:
            return None

    async def start_gc(self) -> Any:
        from kubeloop.controllers import GarbageCollector

        gc = GarbageCollector(self.client, clock=self.clock, workers=2)
        self.tasks.append(asyncio.create_task(gc.run()))
        await self.until(lambda: _const(gc.has_synced()))
        return gc

    async def until(self, check: Callable[[], Awaitable[Any]], tries: int = 3000) -> Any:
        """Poll ``check`` (yielding to the loop, advancing fake time) until it is truthy."""
        for _ in range(tries):
            result = await check()
            if result:
                return result
            for _ in range(3):
                await asyncio.sleep(0)
            await self.clock.advance(0.05)
        raise AssertionError("condition not reached")


async def _const(value: Any) -> Any:
    return value


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    app = create_app(store=store, clock=clock, rng=random.Random(7))
    await app.startup()
    client = Client.from_asgi(app, clock=clock, default_namespace="prod")
    c = Cluster(client, clock)
    try:
        await client.create(NAMESPACES, {"metadata": {"name": "prod"}})
        yield c
    finally:
        for task in c.tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*c.tasks, return_exceptions=True)
        await client.close()
        await app.shutdown()
        await store.close()
