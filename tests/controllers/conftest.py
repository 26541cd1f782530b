"""The in-process cluster for the GC and namespace controller tests: :class:`kubeloop.testing.InProcessCluster`
(the real server on a SQLite store in ``tmp_path``, the real client over ASGI, one ``FakeClock``) with
namespace ``ns``, the default for :meth:`~kubeloop.testing.InProcessCluster.create`. Polling is
:func:`kubeloop.testing.eventually`: bounded in loop turns, never in wall-clock time; tasks started with
``run_in_background`` are cancelled at teardown, so no task leaks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.client import Client
from kubeloop.controllers import GarbageCollector
from kubeloop.testing import FakeClock, InProcessCluster, eventually, resource

NAMESPACES = resource("", "Namespace")
CONFIGMAPS = resource("", "ConfigMap")
SECRETS = resource("", "Secret")
PODS = resource("", "Pod")
EVENTS = resource("", "Event")
NODES = resource("", "Node")
DEPLOYMENTS = resource("apps", "Deployment")
REPLICASETS = resource("apps", "ReplicaSet")
CRDS = resource("apiextensions.k8s.io", "CustomResourceDefinition")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns") as c:
        yield c


def fake_clock(cluster: InProcessCluster) -> FakeClock:
    assert isinstance(cluster.clock, FakeClock)
    return cluster.clock


async def start_gc(cluster: InProcessCluster, client: Client | None = None) -> GarbageCollector:
    gc = GarbageCollector(client or cluster.client, clock=cluster.clock, workers=2)
    cluster.run_in_background(gc.run())

    async def synced() -> bool:
        return gc.has_synced()

    await eventually(synced, clock=fake_clock(cluster))
    return gc


async def settle(gc: GarbageCollector, cluster: InProcessCluster) -> None:
    """Wait until both GC queues are idle (nothing queued, in flight or waiting for a retry)."""

    async def idle() -> bool:
        return gc.idle()

    await eventually(idle, clock=fake_clock(cluster))


@pytest.fixture(autouse=True)
def _utc_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CronJob controller runs a schedule without ``timeZone`` in the process's local zone (Go's
    ``time.Local``: ``TZ``, else ``/etc/localtime``); these tests' expected times are written in UTC, so
    they pin it, whatever the machine's zone. A test that wants another zone sets ``TZ`` itself."""
    monkeypatch.setenv("TZ", "UTC")
