"""Manager and builder end to end: informers -> predicates/handlers -> queue -> reconciler; probes; leader election.

Reached through the real ``kubeloop.client.Client`` and the real shared informers. Until
``kubeloop.server.create_app`` lands, the server behind them is the client suite's in-memory API
(tests/client/_fakeapi.py); a stop-gap, to be replaced by the real server.
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.runtime import (
    Builder,
    EnqueueMapped,
    GenerationChanged,
    LeaderElectionOptions,
    LeadershipLost,
    Manager,
    Request,
    Result,
)
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _fakeapi import FakeApi

REG = KindRegistry()
DEPLOY: ResourceInfo = REG.by_kind("apps", "Deployment")  # type: ignore[assignment]
RS: ResourceInfo = REG.by_kind("apps", "ReplicaSet")  # type: ignore[assignment]
CM: ResourceInfo = REG.by_kind("", "ConfigMap")  # type: ignore[assignment]


async def eventually(cond: Callable[[], bool], *, turns: int = 3000) -> None:
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


@pytest.fixture
def api() -> FakeApi:
    return FakeApi(REG)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client(api: FakeApi, clock: FakeClock) -> AsyncIterator[Client]:
    async with Client.from_asgi(api, clock=clock) as c:
        yield c


def deploy(name: str, generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "generation": generation}, "spec": {"replicas": 1}}


def replicaset(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    return {"metadata": {"name": name, "namespace": "ns", "ownerReferences": [ref]}, "spec": {}}


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Request] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.seen.append(request)
        return None


async def start(manager: Manager) -> asyncio.Task[None]:
    task = asyncio.create_task(manager.run())
    await asyncio.sleep(0)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_for_and_owns_enqueue_the_object_and_its_controlling_owner(
    api: FakeApi, client: Client, clock: FakeClock
) -> None:
    web = api.seed(DEPLOY, deploy("web"))
    manager = Manager(client, clock=clock, rng=random.Random(1))
    rec = Recorder()
    controller = Builder(manager).for_(DEPLOY).owns(RS).build(rec)
    assert controller.name == "deployment"
    task = await start(manager)
    await eventually(lambda: rec.seen == [Request("ns", "web")])
    api.seed(RS, replicaset("web-abc", web))
    await eventually(lambda: len(rec.seen) == 2)
    assert rec.seen[1] == Request("ns", "web")  # the owner, not the ReplicaSet
    api.seed(RS, {"metadata": {"name": "orphan", "namespace": "ns"}, "spec": {}})
    api.seed(DEPLOY, deploy("other"))
    await eventually(lambda: Request("ns", "other") in rec.seen)
    assert Request("ns", "orphan") not in rec.seen
    await stop(task)


async def test_predicates_on_for_drop_status_only_updates(
    api: FakeApi, client: Client, clock: FakeClock
) -> None:
    api.seed(DEPLOY, deploy("web"))
    manager = Manager(client, clock=clock)
    rec = Recorder()
    Builder(manager).for_(DEPLOY, GenerationChanged()).build(rec)
    task = await start(manager)
    await eventually(lambda: len(rec.seen) == 1)
    await client.patch(DEPLOY, "web", {"status": {"replicas": 1}}, namespace="ns", subresource="status")
    await client.patch(
        DEPLOY, "web", {"metadata": {"generation": 2}, "spec": {"replicas": 2}}, namespace="ns"
    )
    await eventually(lambda: len(rec.seen) == 2)
    for _ in range(200):
        await asyncio.sleep(0)
    assert len(rec.seen) == 2  # the status-only write woke nobody
    await stop(task)


async def test_watches_with_a_mapping_function(api: FakeApi, client: Client, clock: FakeClock) -> None:
    manager = Manager(client, clock=clock)
    rec = Recorder()

    def to_deployment(obj: Any) -> list[Request]:
        target = (obj["metadata"].get("labels") or {}).get("for")
        return [Request("ns", target)] if target else []

    Builder(manager).named("mapper").for_(DEPLOY).watches(CM, EnqueueMapped(to_deployment)).build(rec)
    task = await start(manager)
    api.seed(CM, {"metadata": {"name": "cfg", "namespace": "ns", "labels": {"for": "web"}}})
    await eventually(lambda: rec.seen == [Request("ns", "web")])
    await stop(task)


async def test_controller_names_are_unique_and_for_is_required(client: Client) -> None:
    manager = Manager(client)
    Builder(manager).for_(DEPLOY).build(Recorder())
    with pytest.raises(ValueError, match="already registered"):
        Builder(manager).for_(DEPLOY).build(Recorder())
    with pytest.raises(ValueError, match="for_"):
        Builder(manager).owns(RS).build(Recorder())


async def test_probes_report_readiness_from_caches_not_from_convergence(
    api: FakeApi, client: Client, clock: FakeClock
) -> None:
    api.seed(DEPLOY, deploy("broken"))
    manager = Manager(client, clock=clock)

    async def always_failing(request: Request) -> None:
        raise RuntimeError("cannot converge")

    Builder(manager).for_(DEPLOY).build(always_failing)
    probes = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=manager.probe_app()), base_url="http://probe"
    )
    async with probes:
        ready = await probes.get("/readyz", params={"verbose": ""})
        assert ready.status_code == 500 and "[-]informers-synced failed" in ready.text
        task = await start(manager)
        controller = manager.controllers["deployment"]
        await eventually(lambda: controller.queue.num_requeues(Request("ns", "broken")) >= 1)
        assert (await probes.get("/readyz")).status_code == 200
        health = await probes.get("/healthz")
        assert health.status_code == 200 and health.text == "ok"
        metrics = (await probes.get("/metrics")).text
        assert 'controller_runtime_reconcile_total{controller="deployment",result="error"} 1.0' in metrics
        assert 'workqueue_retries_total{controller="deployment",name="deployment"}' in metrics
        assert (await probes.get("/nope")).status_code == 404
        await stop(task)


async def test_only_the_leader_runs_controllers_and_loss_of_the_lease_stops_it(
    api: FakeApi, client: Client, clock: FakeClock
) -> None:
    api.seed(DEPLOY, deploy("web"))
    managers, recorders = [], []
    for identity in ("a", "b"):
        m = Manager(client, clock=clock, rng=random.Random(3),
                    leader_election=LeaderElectionOptions("ctrl", identity=identity))  # fmt: skip
        rec = Recorder()
        Builder(m).for_(DEPLOY).build(rec)
        managers.append(m)
        recorders.append(rec)
    a = await start(managers[0])
    await eventually(lambda: len(recorders[0].seen) == 1)
    b = await start(managers[1])
    await eventually(lambda: managers[1].informers.has_synced())  # the standby's caches are warm
    for _ in range(20):
        await clock.advance(1)
        await eventually(lambda: True)
    assert recorders[1].seen == []
    api.fail("PUT", 500, times=1000)  # nobody can write the lease any more
    api.fail("GET", 500, path_contains="leases", times=1000)
    for _ in range(40):
        await clock.advance(0.5)
        for _ in range(100):
            await asyncio.sleep(0)
    assert a.done()
    with pytest.raises(LeadershipLost):
        a.result()
    assert recorders[1].seen == []
    await stop(b)
