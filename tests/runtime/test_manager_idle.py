"""``Manager.idle(until=...)``: quiescence seen directly, on a fake clock.

Against the real API server in-process (tests/client/_realapi.py): idle only once it runs, its
informers synced and its workers started; never while a request is queued or in reconcile; and a
delayed requeue (``requeue_after``, a failure's backoff) keeps it busy from the time it is due.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import pytest

from kubeloop.client import Client
from kubeloop.runtime import Builder, LeaderElectionOptions, Manager, Request, Result

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, cluster_fixtures, eventually, kind

# The real API server in-process on a FakeClock, with namespaces ``ns`` and ``kube-system``: bound
# here, where it is used, so the runtime's unit tests never build (or import) a server.
cluster, client = cluster_fixtures("ns", "kube-system")

CM = kind("", "ConfigMap")


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_idle_once_synced_with_nothing_queued_and_busy_again_from_a_requeue_due_time(
    cluster: Cluster, client: Client
) -> None:
    await client.create(CM, {"metadata": {"name": "a", "namespace": "ns"}})
    manager = Manager(client, clock=cluster.clock, rng=random.Random(1))
    seen: list[float] = []

    async def resync_every_30s(request: Request) -> Result:
        seen.append(cluster.clock.monotonic())
        return Result(requeue_after=30.0)

    Builder(manager).for_(CM).build(resync_every_30s)
    assert not manager.idle(), "a manager that does not run is not idle"
    task = asyncio.create_task(manager.run())
    await eventually(lambda: len(seen) == 1, what="the first reconcile")
    await cluster.settle()
    now = cluster.clock.monotonic()
    assert manager.idle() and manager.idle(until=now + 29.0)
    assert not manager.idle(until=now + 30.0), "the requeue is due at +30 s"
    await cluster.clock.advance(30.0)
    await eventually(lambda: len(seen) == 2, what="the requeue")
    await cluster.settle()
    assert manager.idle() and not manager.idle(until=cluster.clock.monotonic() + 30.0)
    await client.create(CM, {"metadata": {"name": "b", "namespace": "ns"}})
    await eventually(lambda: len(seen) == 3, what="the new object's reconcile")
    await stop(task)
    assert not manager.idle(), "a stopped manager is not idle"


async def test_not_idle_while_a_reconcile_is_in_flight_or_a_failure_backs_off(
    cluster: Cluster, client: Client
) -> None:
    await client.create(CM, {"metadata": {"name": "a", "namespace": "ns"}})
    manager = Manager(client, clock=cluster.clock, rng=random.Random(1))
    release = asyncio.Event()
    started: list[Request] = []

    async def slow_then_failing(request: Request) -> None:
        started.append(request)
        if len(started) == 1:
            await release.wait()
            return
        raise RuntimeError("a dependency is down")

    controller = Builder(manager).for_(CM).build(slow_then_failing)
    task = asyncio.create_task(manager.run())
    await eventually(lambda: len(started) == 1, what="the reconcile to start")
    await cluster.settle()
    assert controller.queue.in_flight == 1
    assert not manager.idle(), "a reconcile is in flight"
    release.set()
    await eventually(lambda: controller.queue.in_flight == 0, what="the reconcile to finish")
    assert manager.idle()
    await client.patch(CM, "a", {"data": {"k": "v"}}, namespace="ns")
    await eventually(lambda: len(started) == 2 and controller.queue.in_flight == 0, what="the failing reconcile")
    # The failure's first backoff is 5 ms (ItemExponential): idle right now, not 1 s from now.
    due = controller.queue.next_ready_at
    assert due is not None and due == pytest.approx(cluster.clock.monotonic() + 0.005)
    assert manager.idle() and not manager.idle(until=cluster.clock.monotonic() + 1.0)
    await stop(task)


async def test_a_standby_replica_is_never_idle(cluster: Cluster, client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a", "namespace": "ns"}})
    leader, standby = (
        Manager(client, clock=cluster.clock, rng=random.Random(3),
                leader_election=LeaderElectionOptions("idle", identity=identity))
        for identity in ("leader", "standby")
    )  # fmt: skip
    reconciled: list[str] = []
    for manager, who in ((leader, "leader"), (standby, "standby")):

        async def record(request: Request, who: str = who) -> None:
            reconciled.append(who)

        Builder(manager).for_(CM).build(record)
    first = asyncio.create_task(leader.run())
    await eventually(lambda: reconciled == ["leader"], what="the leader's reconcile")
    second = asyncio.create_task(standby.run())
    await eventually(standby.informers.has_synced, what="the standby's informers")
    await cluster.run_for(4.0)
    assert leader.idle() and not standby.idle() and reconciled == ["leader"]
    await stop(second)
    await stop(first)


async def test_a_stopped_manager_without_controllers_is_not_idle(cluster: Cluster, client: Client) -> None:
    # With no controller, "every controller idle" holds vacuously; once run() has returned the
    # manager converges nothing any more, so reporting idle would pass for convergence.
    manager = Manager(client, clock=cluster.clock, rng=random.Random(1))
    assert not manager.idle(), "a manager that never ran is not idle"
    task = asyncio.create_task(manager.run())
    await eventually(manager.idle, what="the running manager to be idle")
    await stop(task)
    assert not manager.idle() and not manager.idle(until=cluster.clock.monotonic() + 60.0)


async def test_a_manager_whose_run_failed_is_not_idle(cluster: Cluster, client: Client) -> None:
    manager = Manager(client, clock=cluster.clock, rng=random.Random(1))

    class Crashes:
        async def run(self) -> None:
            raise RuntimeError("a runnable failed")

    manager.add(Crashes(), needs_leader_election=False)
    with pytest.raises(RuntimeError, match="a runnable failed"):
        await manager.run()
    assert not manager.idle()
