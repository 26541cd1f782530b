"""An in-process cluster for the guard tools: :class:`kubeloop.testing.InProcessCluster` (the real server on
SQLite, the real client over ASGI, one ``FakeClock``) with namespace ``prod``, the real garbage collector,
and helpers to build owner chains by hand (the workload controllers are not needed: ownerReferences are
written directly, as the issue asks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import ResourceInfo
from kubeloop.controllers import GarbageCollector
from kubeloop.testing import FakeClock, InProcessCluster, resource
from kubeloop.testing import owner_ref as _owner_ref

NAMESPACES = resource("", "Namespace")
CONFIGMAPS = resource("", "ConfigMap")
PODS = resource("", "Pod")
PVCS = resource("", "PersistentVolumeClaim")
PVS = resource("", "PersistentVolume")
DEPLOYMENTS = resource("apps", "Deployment")
REPLICASETS = resource("apps", "ReplicaSet")
STATEFULSETS = resource("apps", "StatefulSet")
CLUSTERROLES = resource("rbac.authorization.k8s.io", "ClusterRole")

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
SPECS: dict[str, dict[str, Any]] = {
    "Deployment": {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
    "ReplicaSet": {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
    "Pod": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
}

# The chains here are built as controllers build them: controller references that block deletion.
owner_ref = partial(_owner_ref, controller=True, block=True)


class Cluster(InProcessCluster):
    async def make(self, resource: ResourceInfo, name: str, *, namespace: str | None = None,
                   owners: Iterable[dict[str, Any]] | None = None, finalizers: Iterable[str] | None = None,
                   annotations: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:  # fmt: skip
        """:meth:`create` with a minimal valid spec for the kinds that need one (:data:`SPECS`)."""
        return await self.create(resource, name, namespace=namespace, owners=owners, finalizers=finalizers,
                                 annotations=annotations, **{**SPECS.get(resource.kind, {}), **body})  # fmt: skip

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

    async def start_gc(self) -> GarbageCollector:
        gc = GarbageCollector(self.client, clock=self.clock, workers=2)
        self.run_in_background(gc.run())

        async def synced() -> bool:
            return gc.has_synced()

        await self.eventually(synced, tries=3000)
        return gc


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with Cluster(tmp_path, clock=FakeClock(), namespaces=["prod"], default_namespace="prod") as c:
        yield c
