"""What the controller test worlds share: an in-process cluster, a manager writing through an
:class:`InterceptedClient`, polling, reads, and the steady-state write count.

:func:`managed_cluster` opens a :class:`kubeloop.testing.InProcessCluster` (the real server on a SQLite
store in ``tmp_path``, one ``FakeClock``, namespace ``ns``) and a ``Manager`` whose client is an
``InterceptedClient`` (so tests count, fail or race the controllers' writes); the test talks to the API
through the cluster's own client. A world (:class:`ManagedWorld`) adds the controllers to the manager,
then :meth:`ManagedWorld.start` runs it. Polling is bounded in loop turns, never in wall-clock time; time
moves only when a test advances it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kubeloop.api import ResourceInfo
from kubeloop.client import Client
from kubeloop.runtime import Manager, Request
from kubeloop.testing import FakeClock, Faults, InProcessCluster, InterceptedClient, Write, eventually

__all__ = ["NS", "ManagedWorld", "managed_cluster"]

NS = "ns"


@contextlib.asynccontextmanager
async def managed_cluster(
    tmp_path: Path, *, faults: Faults | None = None, before_write: Callable[[Write], Awaitable[None]] | None = None
) -> AsyncIterator[tuple[InProcessCluster, InterceptedClient, Manager]]:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=[NS]) as cluster:
        ctl = InterceptedClient(cluster.new_client(Client), faults=faults, before_write=before_write)
        yield cluster, ctl, Manager(ctl, clock=cluster.clock, rng=random.Random(3))


@dataclass(kw_only=True)
class ManagedWorld:
    cluster: InProcessCluster
    ctl: InterceptedClient
    manager: Manager
    tasks: list[asyncio.Task[None]] = field(default_factory=list)  # the test's own; cancelled first at exit

    settle_turns: ClassVar[int] = 30
    poll_interval: ClassVar[float] = 0.005
    poll_tries: ClassVar[int] = 600

    @property
    def client(self) -> Client:
        return self.cluster.client

    @property
    def clock(self) -> FakeClock:
        assert isinstance(self.cluster.clock, FakeClock)
        return self.cluster.clock

    @contextlib.asynccontextmanager
    async def started(self) -> AsyncIterator[None]:
        """Run the manager (until the cluster closes); the test's own tasks are cancelled on exit."""
        self.cluster.run_in_background(self.manager.run())
        try:
            yield
        finally:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def synced(self) -> None:
        for controller in self.manager.controllers.values():
            await asyncio.wait_for(controller.synced.wait(), 10)

    # -- polling -----------------------------------------------------------------------------------

    async def settle(self, turns: int | None = None) -> None:
        """Let in-flight requests and events finish (a few real loop turns, no fake time)."""
        for _ in range(self.settle_turns if turns is None else turns):
            await asyncio.sleep(0.002)

    async def eventually(self, check: Callable[[], Awaitable[Any]], *, step: float = 0.0, tries: int | None = None) -> Any:
        """Poll ``check`` until truthy (AssertionError counts as not yet); ``step`` advances fake time."""
        return await eventually(check, clock=self.clock if step else None, step=step, interval=self.poll_interval,
                                tries=self.poll_tries if tries is None else tries)  # fmt: skip

    async def advance(self, seconds: float, *, turns: int = 10) -> None:
        """Move fake time in one step and let the controllers react."""
        await self.clock.advance(seconds)
        await self.settle(turns)

    # -- reads and writes --------------------------------------------------------------------------

    async def get(self, resource: ResourceInfo, name: str, namespace: str | None = NS) -> dict[str, Any]:
        return await self.client.get(resource, name, namespace=namespace if resource.namespaced else None)

    async def maybe(self, resource: ResourceInfo, name: str, namespace: str | None = NS) -> dict[str, Any] | None:
        return await self.cluster.get_or_none(resource, name, namespace if resource.namespaced else None)

    async def create(self, resource: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create(resource, obj, namespace=NS if resource.namespaced else None)

    # -- steady state ------------------------------------------------------------------------------

    async def quiet_writes(self, *, turns: int = 60) -> int:
        """Writes the controllers make while nothing changes: reconcile every object again, count writes."""
        # Writes in flight finish (and are recorded) before counting starts: settle until a whole round
        # records none, so a loaded machine (slow real turns) does not count late writes as quiet ones.
        for _ in range(50):
            recorded = len(self.ctl.writes)
            await self.settle(turns)
            if len(self.ctl.writes) == recorded:
                break
        self.ctl.reset()
        for controller in self.manager.controllers.values():
            for watch in controller.watches[:1]:
                for obj in watch.source.cache.list():  # type: ignore[attr-defined]
                    controller.enqueue(Request.for_object(obj))
        await self.settle(turns)
        return len([w for w in self.ctl.writes if w.outcome == "ok"])
