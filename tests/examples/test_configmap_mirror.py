"""The sample controller (examples/configmap_mirror.py) end to end against the in-process server:
it converges, survives a dropped watch and a 410, retries a Conflict, writes nothing when nothing
changed, and of two manager replicas exactly one leads, with failover when the leader stops.

Faults are injected by wrapping the real app (``FaultyApp``) or the real client; time is a FakeClock.
"""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _realapi import Cluster, cluster_fixtures, eventually, kind
from configmap_mirror import MIRROR_LABEL, setup

from kubeloop.api import NotFound
from kubeloop.client import Client
from kubeloop.runtime import LeaderElectionOptions, Manager

CM = kind("", "ConfigMap")
SECRET = kind("", "Secret")
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def configmap(name: str, *, mirror: bool = True, **data: str) -> dict[str, Any]:
    labels = {MIRROR_LABEL: "true"} if mirror else {}
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}, "data": data}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


cluster, client = cluster_fixtures("ns", "kube-system")


class Running:
    """A manager running the example controller in a task."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.controller = setup(manager)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> Running:
        self.task = asyncio.create_task(self.manager.run())
        return self

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    def reconciles(self) -> float:
        m = self.manager.metrics
        return sum(
            m.sample("controller_runtime_reconcile_total", {"controller": "configmap-mirror", "result": r}) or 0
            for r in ("success", "error", "requeue_after")
        )


@pytest.fixture
async def mirror(cluster: Cluster) -> AsyncIterator[Running]:
    running = Running(Manager(cluster.client(), clock=cluster.clock, rng=random.Random(5))).start()
    yield running
    await running.stop()


async def secret_data(client: Client, name: str) -> dict[str, str] | None:
    try:
        return dict((await client.get(SECRET, name, namespace="ns")).get("data") or {})
    except NotFound:
        return None


async def until_secret(client: Client, name: str, data: dict[str, str] | None) -> None:
    """Wait until the Secret has exactly ``data`` (``None``: does not exist)."""
    current: list[dict[str, str] | None] = [await secret_data(client, name)]
    pending: list[asyncio.Task[None]] = []

    async def refresh() -> None:
        current[0] = await secret_data(client, name)

    def done() -> bool:
        if pending and pending[0].done():
            pending.clear()
        if current[0] == data:
            return True
        if not pending:
            pending.append(asyncio.create_task(refresh()))
        return False

    try:
        await eventually(done, what=f"secret ns/{name} == {data}")
    finally:
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def secret_writes(cluster: Cluster) -> int:
    return sum(1 for r in cluster.app.requests if r.method in WRITES and "/secrets" in r.path)


async def test_a_labelled_configmap_gets_an_owned_secret_with_the_same_data_and_keeps_it_in_step(
    cluster: Cluster, client: Client, mirror: Running
) -> None:
    cm = await client.create(CM, configmap("app", mode="fast"))
    await client.create(CM, configmap("plain", mirror=False, x="1"))
    await until_secret(client, "app", {"mode": b64("fast")})
    secret = await client.get(SECRET, "app", namespace="ns")
    (ref,) = secret["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("ConfigMap", "app", cm["metadata"]["uid"], True)
    assert secret["type"] == "Opaque"
    await client.patch(CM, "app", {"data": {"mode": "slow", "extra": "1"}}, namespace="ns")
    await until_secret(client, "app", {"mode": b64("slow"), "extra": b64("1")})
    await cluster.settle()
    assert await secret_data(client, "plain") is None  # not labelled: left alone


async def test_the_secret_is_restored_when_edited_or_deleted_and_removed_with_the_label(
    cluster: Cluster, client: Client, mirror: Running
) -> None:
    await client.create(CM, configmap("app", mode="fast"))
    await until_secret(client, "app", {"mode": b64("fast")})
    await client.patch(SECRET, "app", {"data": {"mode": b64("hacked")}}, namespace="ns")
    await until_secret(client, "app", {"mode": b64("fast")})  # owns(): the owner was reconciled
    await client.delete(SECRET, "app", namespace="ns")
    await until_secret(client, "app", {"mode": b64("fast")})
    await client.patch(CM, "app", {"metadata": {"labels": {MIRROR_LABEL: None}}}, namespace="ns")
    await until_secret(client, "app", None)


async def test_it_converges_across_a_dropped_watch_and_a_410(
    cluster: Cluster, client: Client, mirror: Running
) -> None:
    await client.create(CM, configmap("app", v="1"))
    await until_secret(client, "app", {"v": b64("1")})
    await eventually(lambda: cluster.app.open_watches == 2)  # ConfigMaps and Secrets
    cluster.app.drop_watches()
    await client.patch(CM, "app", {"data": {"v": "2"}}, namespace="ns")  # may happen while reconnecting
    await until_secret(client, "app", {"v": b64("2")})
    await cluster.run_for(2, step=0.1)  # a stream that had delivered nothing resumes after a backoff
    await eventually(lambda: cluster.app.open_watches == 2)
    # A 410 whose relist fails once: the changes below are only seen by the relist after the backoff.
    cluster.app.fail("GET", 500, path_contains="/configmaps", times=1)
    cluster.app.expire_watches()
    await client.patch(CM, "app", {"data": {"v": "3"}}, namespace="ns")
    await client.create(CM, configmap("late", v="x"))
    await cluster.run_for(2, step=0.1)
    await until_secret(client, "app", {"v": b64("3")})
    await until_secret(client, "late", {"v": b64("x")})


async def test_a_conflict_on_write_is_retried_with_backoff_and_converges(cluster: Cluster, client: Client) -> None:
    other = cluster.client()
    conflicts: list[str] = []

    class RacingClient(Client):
        """Every first update of a Secret races a real concurrent writer, so the server answers 409."""

        async def update(self, resource: Any, obj: Any, **kw: Any) -> dict[str, Any]:
            name = obj["metadata"]["name"]
            if resource.plural == "secrets" and name not in conflicts:
                conflicts.append(name)
                await other.patch(SECRET, name, {"metadata": {"labels": {"touched": "yes"}}}, namespace="ns")
            return await super().update(resource, obj, **kw)

    running = Running(Manager(cluster.client(RacingClient), clock=cluster.clock)).start()
    try:
        await client.create(CM, configmap("app", v="1"))
        await until_secret(client, "app", {"v": b64("1")})
        await client.patch(CM, "app", {"data": {"v": "2"}}, namespace="ns")
        await eventually(lambda: conflicts == ["app"])
        await cluster.run_for(0.1, step=0.01)  # the key's backoff (5 ms) on the fake clock
        await until_secret(client, "app", {"v": b64("2")})
        metrics = running.manager.metrics
        labels = {"controller": "configmap-mirror", "name": "configmap-mirror"}
        assert metrics.sample("workqueue_retries_total", labels) == 1
        secret = await client.get(SECRET, "app", namespace="ns")
        assert secret["metadata"]["labels"] == {"touched": "yes"}  # the other writer's change survived
    finally:
        await running.stop()


async def test_nothing_is_written_when_nothing_changed(cluster: Cluster, client: Client, mirror: Running) -> None:
    for i in range(3):
        await client.create(CM, configmap(f"app{i}", v=str(i)))
    for i in range(3):
        await until_secret(client, f"app{i}", {"v": b64(str(i))})
    await cluster.settle()
    writes, reconciles = secret_writes(cluster), mirror.reconciles()
    # A change that does not affect the Secret wakes the reconciler ...
    await client.patch(CM, "app0", {"metadata": {"annotations": {"note": "hello"}}}, namespace="ns")
    await eventually(lambda: mirror.reconciles() > reconciles)
    # ... and a second manager starting from scratch reconciles every ConfigMap again ...
    second = Running(Manager(cluster.client(), clock=cluster.clock)).start()
    try:
        await eventually(lambda: second.reconciles() >= 3)
        await cluster.settle()
    finally:
        await second.stop()
    assert secret_writes(cluster) == writes  # ... without a single write


async def test_two_replicas_elect_exactly_one_leader_and_fail_over_when_it_stops(
    cluster: Cluster, client: Client
) -> None:
    replicas = [
        Running(Manager(
            cluster.client(), clock=cluster.clock, rng=random.Random(i),
            leader_election=LeaderElectionOptions("configmap-mirror", identity=f"replica-{i}"),
        ))
        for i in range(2)
    ]  # fmt: skip
    for r in replicas:
        r.start()
    await client.create(CM, configmap("app", v="1"))
    await until_secret(client, "app", {"v": b64("1")})
    await cluster.run_for(30)
    leading = [r for r in replicas if r.controller.synced.is_set()]
    assert len(leading) == 1  # exactly one replica runs the controller
    (leader,) = leading
    (standby,) = [r for r in replicas if r is not leader]
    assert standby.reconciles() == 0 and standby.manager.informers.has_synced()
    status = [
        r.manager.metrics.sample("leader_election_master_status", {"name": "configmap-mirror"}) for r in replicas
    ]
    assert sorted(status) == [0, 1]

    await leader.stop()  # stops without releasing the Lease: the standby must wait for it to expire
    await client.patch(CM, "app", {"data": {"v": "2"}}, namespace="ns")
    await cluster.run_for(10)
    assert await secret_data(client, "app") == {"v": b64("1")}  # nobody leads yet
    await cluster.run_for(10)  # lease 15 s + one retry period with jitter
    await until_secret(client, "app", {"v": b64("2")})
    assert standby.controller.synced.is_set() and standby.reconciles() >= 1
    lease = await client.get(kind("coordination.k8s.io", "Lease"), "configmap-mirror", namespace="kube-system")
    assert lease["spec"]["holderIdentity"] == standby.manager.elector.identity  # type: ignore[union-attr]
    assert lease["spec"]["leaseTransitions"] == 1
    await standby.stop()
