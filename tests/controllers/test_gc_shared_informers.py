"""The GC under a manager monitors the kinds other controllers watch through the manager's informers.

Upstream's garbage collector takes its monitors from the shared informer factory
(k/k ``pkg/controller/garbagecollector/graph_builder.go`` ``controllerFor`` with
``informerFactory.ForResource``), so a kind watched by several controllers costs one list and one
watch. The GC's own informers remain for every other kind; stopping the GC never stops the manager's.
The manager's informers run in a ``started`` block, so a failed assertion stops them before the cluster
closes and the test fails at once with its message (a leaked informer kept calling the closed server).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kubeloop.controllers import GarbageCollector, add_builtin_controllers
from kubeloop.runtime import InformerFactory, Manager
from kubeloop.testing import FakeClock, InProcessCluster, eventually, owner_ref

from .conftest import CONFIGMAPS, NAMESPACES, SECRETS


def _key(plural: str) -> tuple[str, str, str]:
    return ("", "v1", plural)


@contextlib.asynccontextmanager
async def started(informers: InformerFactory) -> AsyncIterator[InformerFactory]:
    """The manager's informers, running until the block ends, however it ends."""
    informers.start()
    try:
        yield informers
    finally:
        await informers.stop()


async def test_a_kind_the_manager_watches_is_listed_once_and_the_gc_still_collects_through_it(tmp_path: Path) -> None:
    async with InProcessCluster(
        tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns", inject_http_faults=True
    ) as cluster:
        manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0)
        added = add_builtin_controllers(manager, names=["garbage-collector", "namespace"])
        gc = added["garbage-collector"]
        assert isinstance(gc, GarbageCollector)
        cluster.run_in_background(manager.run())

        async def ready() -> bool:
            return all(ok for _, ok in await manager.health.run("readyz"))

        await eventually(ready, clock=cluster.clock)
        shared = manager.informers.existing(NAMESPACES)
        assert shared is not None
        assert gc.monitors.informers[_key("namespaces")][0] is shared
        # configmaps: no other controller watches them, so the GC has its own informer
        assert manager.informers.existing(CONFIGMAPS) is None
        own = gc.monitors.informers[_key("configmaps")][0]
        assert own not in manager.informers.informers and own.running
        faults = cluster.http_faults
        assert len(faults.lists("/namespaces")) == 1
        assert len([w for w in faults.watches() if w.path.endswith("/namespaces")]) == 1

        # A cluster-scoped owner seen only through the shared informer: its deletion reaches the GC.
        owner = await cluster.create(NAMESPACES, "doomed")
        await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
        await cluster.client.delete(NAMESPACES, "doomed")
        await eventually(lambda: cluster.gone(NAMESPACES, "doomed", None), clock=cluster.clock)
        await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)


async def test_stopping_the_gc_removes_its_handlers_but_leaves_the_managers_informers_running(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as cluster:
        manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0)
        shared = manager.informer(NAMESPACES)  # what another controller would have asked for
        gc = GarbageCollector(cluster.client, clock=cluster.clock, workers=1, informers=manager.informers)
        async with started(manager.informers):
            running = cluster.run_in_background(gc.run())

            async def synced() -> bool:
                return gc.has_synced()

            await eventually(synced, clock=cluster.clock)
            assert gc.monitors.informers[_key("namespaces")][0] is shared
            own = gc.monitors.informers[_key("configmaps")][0]
            gc.stop()

            async def ended() -> bool:
                return running.done()

            await eventually(ended, clock=cluster.clock)
            assert running.exception() is None
            assert shared.running
            assert not own.running
            # The GC's handler is off the shared informer: an object it delivers now never reaches the graph.
            late = await cluster.create(NAMESPACES, "late")

            async def delivered() -> bool:
                return shared.cache.get_by_name("late") is not None

            await eventually(delivered, clock=cluster.clock)
            assert late["metadata"]["uid"] not in gc.graph.nodes
            seen: list[str] = []
            shared.add_handler(lambda obj: seen.append(obj["metadata"]["name"]))
            assert "ns" in seen  # the informer still serves its cache to others


async def test_a_factory_for_one_namespace_is_not_shared(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as cluster:
        manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0, namespace="ns")
        scoped = manager.informer(CONFIGMAPS)
        gc = GarbageCollector(cluster.client, clock=cluster.clock, workers=1, informers=manager.informers)
        async with started(manager.informers):
            cluster.run_in_background(gc.run())

            async def synced() -> bool:
                return gc.has_synced()

            await eventually(synced, clock=cluster.clock)
            assert gc.monitors.informers[_key("configmaps")][0] is not scoped
