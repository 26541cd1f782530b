"""The built-in controller registry: a Manager runs the GC and namespace controllers and is ready once they synced."""

from __future__ import annotations

import pytest

from kubeloop.controllers import (
    BUILTIN_CONTROLLERS,
    GarbageCollector,
    NamespaceController,
    add_builtin_controllers,
)
from kubeloop.runtime import Manager
from kubeloop.testing import InProcessCluster, eventually, owner_ref

from .conftest import CONFIGMAPS, NAMESPACES, SECRETS


async def test_a_manager_runs_the_builtin_controllers_and_reports_ready_when_synced(cluster: InProcessCluster) -> None:
    # The manager waits graceful_shutdown_timeout (on the fake clock) for runnables that are not
    # runtime Controllers before cancelling them; 0 keeps teardown immediate.
    manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0)
    added = add_builtin_controllers(manager, names=["garbage-collector", "namespace"])
    assert isinstance(added["garbage-collector"], GarbageCollector)
    assert isinstance(added["namespace"], NamespaceController)
    assert {"garbage-collector-synced", "namespace-synced"} <= set(manager.health.readyz)
    assert dict(await manager.health.run("readyz"))["garbage-collector-synced"] is False

    cluster.run_in_background(manager.run())

    async def ready() -> bool:
        return all(ok for _, ok in await manager.health.run("readyz"))

    await eventually(ready, clock=cluster.clock)
    owner = await cluster.create(CONFIGMAPS, "owner")
    await cluster.create(SECRETS, "child", owners=[owner_ref(owner)])
    await cluster.client.delete(CONFIGMAPS, "owner", namespace="ns")
    await eventually(lambda: cluster.gone(SECRETS, "child"), clock=cluster.clock)
    await cluster.client.delete(NAMESPACES, "ns")
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)


def test_the_registry_names_the_builtin_controllers_and_rejects_unknown_names() -> None:
    assert {"garbage-collector", "namespace"} <= set(BUILTIN_CONTROLLERS)
    manager = Manager.__new__(Manager)  # never started: the name check happens first
    with pytest.raises(ValueError, match="unknown controller"):
        add_builtin_controllers(manager, names=["no-such-controller"])


async def test_stopping_the_garbage_collector_ends_its_run(cluster: InProcessCluster) -> None:
    gc = GarbageCollector(cluster.client, clock=cluster.clock, workers=2)
    running = cluster.run_in_background(gc.run())

    async def synced() -> bool:
        return gc.has_synced()

    await eventually(synced, clock=cluster.clock)
    gc.stop()

    async def ended() -> bool:
        return running.done()

    await eventually(ended, clock=cluster.clock)
    assert running.exception() is None
