"""A small world for the workload controller tests (ReplicaSet, Deployment, StatefulSet).

The controllers run in a ``Manager`` on the shared test world (:mod:`._world`: in-process cluster,
writes counted and faults injected through an ``InterceptedClient``, one ``FakeClock`` for server,
controllers and pods). There is no kubelet here: the test plays it, writing pod status through the
API (:meth:`World.set_ready`, :meth:`World.crash_loop`). Polling is bounded in loop turns, never in
wall-clock time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeloop.api import NotFound, ResourceInfo, format_time, label_selector_from_dict, labels_of
from kubeloop.controllers import (
    CronJobController,
    DeploymentController,
    JobController,
    ReplicaSetController,
    ReplicationManager,
    StatefulSetController,
)
from kubeloop.controllers._workload_kinds import DEPLOYMENTS, PODS, PVCS, REPLICASETS, STATEFULSETS
from kubeloop.testing import Faults

from ._world import NS, ManagedWorld, managed_cluster

__all__ = ["DEPLOYMENTS", "NS", "PODS", "PVCS", "REPLICASETS", "STATEFULSETS", "World", "open_world", "template"]

def template(app: str = "web", *, image: str = "nginx:1.25", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app, **labels}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


@dataclass(kw_only=True)
class World(ManagedWorld):
    controllers: dict[str, Any] = field(default_factory=dict)

    async def items(self, resource: ResourceInfo, selector: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        page = await self.client.list(resource, namespace=NS)
        items: list[dict[str, Any]] = page.get("items") or []
        if selector is not None:
            sel = label_selector_from_dict(selector)
            items = [i for i in items if sel.matches(labels_of(i))]
        return items

    async def pods(self, **labels: str) -> list[dict[str, Any]]:
        pods = await self.items(PODS, {"matchLabels": labels} if labels else None)
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    # -- playing the kubelet -----------------------------------------------------------------------

    async def set_ready(self, pod: dict[str, Any] | str, *, ready: bool = True) -> dict[str, Any]:
        name = pod if isinstance(pod, str) else pod["metadata"]["name"]
        now = format_time(self.clock.now())
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}],
            "containerStatuses": [{"name": "c", "ready": ready, "restartCount": 0, "image": "nginx",
                                   "imageID": "", "started": True, "state": {"running": {"startedAt": now}}}],
        }  # fmt: skip
        return await self.client.patch(PODS, name, {"status": status}, namespace=NS, subresource="status")

    async def crash_loop(self, pod: dict[str, Any] | str, *, restarts: int = 3) -> dict[str, Any]:
        name = pod if isinstance(pod, str) else pod["metadata"]["name"]
        now = format_time(self.clock.now())
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now,
                            "reason": "ContainersNotReady", "message": "containers with unready status: [c]"}],
            "containerStatuses": [{"name": "c", "ready": False, "restartCount": restarts, "image": "nginx",
                                   "imageID": "", "started": False, "state": {"waiting": {
                                       "reason": "CrashLoopBackOff",
                                       "message": "back-off 40s restarting failed container=c"}}}],
        }  # fmt: skip
        return await self.client.patch(PODS, name, {"status": status}, namespace=NS, subresource="status")

    async def ready_all(self, **labels: str) -> int:
        count = 0
        for pod in await self.pods(**labels):
            if not any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in (pod.get("status") or {}).get("conditions") or ()):  # fmt: skip
                await self.set_ready(pod)
                count += 1
        return count

    def start_kubelet(self, *, crash_if: Callable[[dict[str, Any]], bool] = lambda pod: False) -> None:
        """Play a kubelet in the background: every pod becomes Running+Ready, or crash-loops if ``crash_if``."""

        async def loop() -> None:
            handled: set[str] = set()
            while True:
                for pod in await self.pods():
                    uid = pod["metadata"]["uid"]
                    if uid in handled:
                        continue
                    handled.add(uid)
                    with contextlib.suppress(NotFound):
                        if crash_if(pod):
                            await self.crash_loop(pod)
                        else:
                            await self.set_ready(pod)
                await asyncio.sleep(0.003)

        self.tasks.append(asyncio.create_task(loop()))


_CONTROLLERS = {"replicaset": ReplicaSetController, "replicationcontroller": ReplicationManager,
                "deployment": DeploymentController,
                "statefulset": StatefulSetController, "job": JobController, "cronjob": CronJobController}


@contextlib.asynccontextmanager
async def open_world(
    tmp_path: Path, *controllers: str, faults: Faults | None = None,
    before_write: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncIterator[World]:
    async with managed_cluster(tmp_path, faults=faults, before_write=before_write) as (cluster, ctl, manager):
        world = World(cluster=cluster, ctl=ctl, manager=manager)
        for name in controllers:
            ctrl = _CONTROLLERS[name](ctl, manager.informers, clock=world.clock, metrics=manager.metrics)
            manager.add_controller(ctrl.controller)
            for extra in ctrl.extra_controllers():  # the Job controller's orphan pod worker
                manager.add_controller(extra)
            manager.add(ctrl.events, needs_leader_election=False)
            world.controllers[name] = ctrl
        async with world.started():
            await world.synced()
            yield world


def names(objs: Sequence[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)
