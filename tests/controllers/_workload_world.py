"""A small world for the workload controller tests (ReplicaSet, Deployment, StatefulSet).

The real server on a SQLite store in ``tmp_path``; the controllers run in a ``Manager`` in the same
loop, through an :class:`InterceptedClient` (write counting, fault injection); the test talks to the
API through its own plain client. One ``FakeClock`` for server, controllers and pods. There is no
kubelet here: the test plays it, writing pod status through the API (:meth:`World.set_ready`,
:meth:`World.crash_loop`). Polling is bounded in loop turns, never in wall-clock time.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeloop.api import ApiError, NotFound, ResourceInfo, format_time, label_selector_from_dict, labels_of
from kubeloop.client import Client
from kubeloop.controllers._workload_kinds import DEPLOYMENTS, PODS, PVCS, REPLICASETS, STATEFULSETS
from kubeloop.runtime import Manager
from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock, Faults, InterceptedClient

__all__ = ["DEPLOYMENTS", "NS", "PODS", "PVCS", "REPLICASETS", "STATEFULSETS", "World", "open_world", "template"]

NS = "ns"
NAMESPACES = ResourceInfo("", "v1", "Namespace", "namespaces", "namespace", False)


def template(app: str = "web", *, image: str = "nginx:1.25", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app, **labels}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


@dataclass
class World:
    client: Client
    ctl: InterceptedClient
    clock: FakeClock
    manager: Manager
    controllers: dict[str, Any] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    # -- polling -----------------------------------------------------------------------------------

    async def settle(self, turns: int = 30) -> None:
        """Let in-flight requests and events finish (a few real loop turns, no fake time)."""
        for _ in range(turns):
            await asyncio.sleep(0.002)

    async def eventually(
        self, check: Callable[[], Awaitable[Any]], *, step: float = 0.0, tries: int = 600
    ) -> Any:
        """Poll ``check`` until truthy (AssertionError counts as not yet); ``step`` advances fake time."""
        last: BaseException | None = None
        for _ in range(tries):
            try:
                result = await check()
                if result:
                    return result
                last = None
            except AssertionError as err:
                last = err
            await asyncio.sleep(0.005)
            if step:
                await self.clock.advance(step)
        if last is not None:
            raise last
        raise AssertionError("condition not reached")

    # -- reads -------------------------------------------------------------------------------------

    async def get(self, resource: ResourceInfo, name: str) -> dict[str, Any]:
        return await self.client.get(resource, name, namespace=NS)

    async def maybe(self, resource: ResourceInfo, name: str) -> dict[str, Any] | None:
        try:
            return await self.get(resource, name)
        except NotFound:
            return None

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

    # -- steady state ------------------------------------------------------------------------------

    async def quiet_writes(self, *, turns: int = 60) -> int:
        """Writes the controllers make while nothing changes: resync every object, count writes."""
        await self.settle(turns)  # writes in flight finish (and are recorded) before counting starts
        self.ctl.reset()
        for ctrl in self.controllers.values():
            for obj in ctrl.controller.watches[0].source.cache.list():
                ctrl.controller.enqueue(_request(obj))
        await self.settle(turns)
        return len([w for w in self.ctl.writes if w.outcome == "ok"])


def _request(obj: dict[str, Any]) -> Any:
    from kubeloop.runtime import Request

    return Request.for_object(obj)


def _factory(name: str) -> Callable[..., Any]:
    import importlib

    module = importlib.import_module(f"kubeloop.controllers._{name}")
    return getattr(module, {"replicaset": "ReplicaSetController", "deployment": "DeploymentController",
                            "statefulset": "StatefulSetController"}[name])  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def open_world(
    tmp_path: Path, *controllers: str, faults: Faults | None = None,
    before_write: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncIterator[World]:
    clock = FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    app = create_app(store=store, clock=clock, rng=random.Random(7))
    await app.startup()
    client = Client.from_asgi(app, clock=clock)
    ctl = InterceptedClient(Client.from_asgi(app, clock=clock), faults=faults, before_write=before_write)
    manager = Manager(ctl, clock=clock, rng=random.Random(3))
    world = World(client, ctl, clock, manager)
    with contextlib.suppress(ApiError):
        await client.create(NAMESPACES, {"metadata": {"name": NS}})
    for name in controllers:
        ctrl = _factory(name)(ctl, manager.informers, clock=clock, metrics=manager.metrics)
        manager.add_controller(ctrl.controller)
        manager.add(ctrl.events, needs_leader_election=False)
        world.controllers[name] = ctrl
    task = asyncio.create_task(manager.run())
    try:
        for ctrl in world.controllers.values():
            await asyncio.wait_for(ctrl.controller.synced.wait(), 10)
        yield world
    finally:
        for t in [*world.tasks, task]:
            t.cancel()
        await asyncio.gather(*world.tasks, task, return_exceptions=True)
        await ctl.close()
        await client.close()
        await app.shutdown()
        await store.close()


def names(objs: Sequence[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)
