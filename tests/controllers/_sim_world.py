"""A simulated cluster for the kubelet, scheduler, volume and disruption tests.

Every simulated-cluster controller (:func:`kubeloop.controllers.add_simulated_cluster`) in a ``Manager``
in the test's loop, on the shared test world (:mod:`._world`: in-process cluster, writes counted through
an ``InterceptedClient``, one ``FakeClock``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeloop.controllers import (
    SimulatedCluster,
    SimulationOptions,
    add_builtin_controllers,
    add_simulated_cluster,
)
from kubeloop.controllers._scheduler_resources import NODES, PDBS, PODS, PVCS, PVS, builtin

from ._world import NS, ManagedWorld, managed_cluster

__all__ = ["NAMESPACES", "NODES", "NS", "PDBS", "PODS", "PVCS", "PVS", "World", "open_world", "pod"]

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


@dataclass(kw_only=True)
class World(ManagedWorld):
    sim: SimulatedCluster

    settle_turns = 40
    poll_interval = 0.004
    poll_tries = 500


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return {}


@contextlib.asynccontextmanager
async def open_world(
    tmp_path: Path, options: SimulationOptions | None = None, *, workloads: bool = False,
    controllers: tuple[str, ...] = (),
) -> AsyncIterator[World]:
    """The simulated cluster; ``workloads`` adds the ReplicaSet, Deployment, StatefulSet and Job controllers
    through the built-in registry (as ``kubeloop controller-manager`` does), ``controllers`` the named
    built-ins."""
    async with managed_cluster(tmp_path) as (cluster, ctl, manager):
        sim = add_simulated_cluster(manager, options)
        if workloads:
            add_builtin_controllers(manager, names=["replicaset", "deployment", "statefulset", "job",
                                                    "ttl-after-finished"])
        if controllers:
            add_builtin_controllers(manager, names=list(controllers))
        world = World(cluster=cluster, ctl=ctl, manager=manager, sim=sim)
        async with world.started():
            count = (options or SimulationOptions()).nodes

            async def registered() -> bool:
                nodes = (await world.client.list(NODES)).get("items") or []
                return len(nodes) >= count and all(condition(n, "Ready").get("status") for n in nodes)

            await world.eventually(registered)
            await world.synced()
            yield world
