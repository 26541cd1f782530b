"""Manager and builder end to end: informers -> predicates/handlers -> queue -> reconciler; probes;
leader election; graceful shutdown on SIGTERM.

Against the real API server in-process (tests/client/_realapi.py), on a FakeClock.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

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

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, FlakyClient, cluster_fixtures, eventually, kind

# The real API server in-process on a FakeClock, with namespaces ``ns`` and ``kube-system``: bound
# here, where it is used, so the runtime's unit tests never build (or import) a server.
cluster, client = cluster_fixtures("ns", "kube-system")

DEPLOY = kind("apps", "Deployment")
RS = kind("apps", "ReplicaSet")
CM = kind("", "ConfigMap")


def _template(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    }


def deploy(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"replicas": 1, **_template(name)}}


def replicaset(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner is not None:
        meta["ownerReferences"] = [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
        }]  # fmt: skip
    return {"metadata": meta, "spec": {"replicas": 1, **_template(name)}}


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
    cluster: Cluster, client: Client
) -> None:
    web = await client.create(DEPLOY, deploy("web"))
    manager = Manager(client, clock=cluster.clock, rng=random.Random(1))
    rec = Recorder()
    controller = Builder(manager).for_(DEPLOY).owns(RS).build(rec)
    assert controller.name == "deployment"
    task = await start(manager)
    await eventually(lambda: rec.seen == [Request("ns", "web")])
    await client.create(RS, replicaset("web-abc", web))
    await eventually(lambda: len(rec.seen) == 2)
    assert rec.seen[1] == Request("ns", "web")  # the owner, not the ReplicaSet
    await client.create(RS, replicaset("orphan", None))
    await client.create(DEPLOY, deploy("other"))
    await eventually(lambda: Request("ns", "other") in rec.seen)
    assert Request("ns", "orphan") not in rec.seen
    await stop(task)


async def test_predicates_on_for_drop_status_only_updates(cluster: Cluster, client: Client) -> None:
    await client.create(DEPLOY, deploy("web"))
    manager = Manager(client, clock=cluster.clock)
    rec = Recorder()
    Builder(manager).for_(DEPLOY, GenerationChanged()).build(rec)
    task = await start(manager)
    await eventually(lambda: len(rec.seen) == 1)
    informer = manager.informer(DEPLOY)
    status = await client.patch(DEPLOY, "web", {"status": {"replicas": 1}}, namespace="ns", subresource="status")
    await eventually(lambda: informer.cache.get("ns/web") == status)  # the informer saw it ...
    await cluster.settle()
    assert len(rec.seen) == 1  # ... and the status-only write woke nobody
    await client.patch(DEPLOY, "web", {"spec": {"replicas": 2}}, namespace="ns")  # generation 2
    await eventually(lambda: len(rec.seen) == 2)
    await stop(task)


async def test_watches_with_a_mapping_function(cluster: Cluster, client: Client) -> None:
    manager = Manager(client, clock=cluster.clock)
    rec = Recorder()

    def to_deployment(obj: Any) -> list[Request]:
        target = (obj["metadata"].get("labels") or {}).get("for")
        return [Request("ns", target)] if target else []

    Builder(manager).named("mapper").for_(DEPLOY).watches(CM, EnqueueMapped(to_deployment)).build(rec)
    task = await start(manager)
    await client.create(CM, {"metadata": {"name": "cfg", "namespace": "ns", "labels": {"for": "web"}}})
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
    cluster: Cluster, client: Client
) -> None:
    await client.create(DEPLOY, deploy("broken"))
    manager = Manager(client, clock=cluster.clock)

    async def always_failing(request: Request) -> None:
        raise RuntimeError("cannot converge")

    Builder(manager).for_(DEPLOY).build(always_failing)
    probes = httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.probe_app()), base_url="http://probe")
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


async def test_only_the_leader_runs_controllers_and_a_lost_lease_stops_them_within_the_renew_deadline(
    cluster: Cluster, client: Client
) -> None:
    await client.create(DEPLOY, deploy("web"))
    managers, recorders, clients = [], [], []
    for identity in ("a", "b"):
        c: FlakyClient = cluster.client(FlakyClient)
        m = Manager(c, clock=cluster.clock, rng=random.Random(3),
                    leader_election=LeaderElectionOptions("ctrl", identity=identity))  # fmt: skip
        rec = Recorder()
        Builder(m).for_(DEPLOY).build(rec)
        managers.append(m)
        recorders.append(rec)
        clients.append(c)
    a = await start(managers[0])
    await eventually(lambda: len(recorders[0].seen) == 1)
    b = await start(managers[1])
    await eventually(lambda: managers[1].informers.has_synced())  # the standby's caches are warm
    await cluster.run_for(20)
    assert recorders[1].seen == [] and not managers[1].controllers["deployment"].synced.is_set()
    elector = managers[0].elector
    assert elector is not None
    clients[0].down = True  # a can no longer reach the server: its next renewal fails
    first_failure = elector._observed_time + elector.retry_period
    await cluster.run_for(first_failure + elector.renew_deadline + 0.25 - cluster.clock.monotonic())
    assert a.done()
    with pytest.raises(LeadershipLost):
        a.result()
    assert managers[0].controllers["deployment"].queue.shutting_down
    assert recorders[1].seen == []  # b cannot take over before the 15 s lease has run out
    await cluster.run_for(10)
    await eventually(lambda: recorders[1].seen == [Request("ns", "web")])  # failover
    await stop(b)


async def test_sigterm_stops_the_manager_after_the_reconcile_in_hand(cluster: Cluster, client: Client) -> None:
    await client.create(DEPLOY, deploy("web"))
    manager = Manager(client, clock=cluster.clock)
    started, finished = asyncio.Event(), asyncio.Event()
    release = asyncio.Event()

    async def slow(request: Request) -> None:
        started.set()
        await release.wait()
        finished.set()

    Builder(manager).for_(DEPLOY).build(slow)
    task = asyncio.create_task(manager.run_until_signalled())
    await started.wait()
    os.kill(os.getpid(), signal.SIGTERM)
    await eventually(lambda: manager.controllers["deployment"].queue.shutting_down)
    assert not task.done()  # the reconcile in hand is allowed to finish ...
    release.set()
    await task  # ... then run_until_signalled returns normally
    assert finished.is_set()
