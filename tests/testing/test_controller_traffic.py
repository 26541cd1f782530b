"""``ControllerTraffic``: one controller's requests recorded with their answers, faults for it alone,
hooks around its writes, and leader election left alone (the grader's seams, tested on the real server)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.api import Conflict, InternalError
from kubeloop.client import Client
from kubeloop.testing import (
    Conflicts,
    ControllerTraffic,
    Exchange,
    Failing,
    FakeClock,
    InProcessCluster,
    resource,
)

CONFIGMAPS = resource("", "ConfigMap")
LEASES = resource("coordination.k8s.io", "Lease")
EVENTS = resource("", "Event")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["team"], default_namespace="team",
                                inject_http_faults=True) as c:  # fmt: skip
        yield c


_opened: list[Client] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _opened:
        await _opened.pop().close()


def traffic_client(cluster: InProcessCluster, traffic: ControllerTraffic) -> Client:
    """A client that reaches the cluster through ``traffic`` (closed after the test)."""
    client = Client.from_asgi(traffic, clock=cluster.clock, default_namespace="team")
    _opened.append(client)
    return client


async def test_requests_are_recorded_with_their_answers_and_only_the_controllers(cluster: InProcessCluster) -> None:
    traffic = ControllerTraffic(cluster.http_faults, clock=cluster.clock)
    client = traffic_client(cluster, traffic)
    await client.create(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "not-mine"}})
    await client.get(CONFIGMAPS, "a")
    post, get = traffic.exchanges
    assert (post.method, post.path, post.status) == ("POST", "/api/v1/namespaces/team/configmaps", 201)
    assert post.request_json()["data"] == {"k": "v"} and post.answer_json()["metadata"]["name"] == "a"
    assert (get.method, get.status, get.answer_json()["data"]) == ("GET", 200, {"k": "v"})
    assert [c["metadata"]["name"] for c in traffic.created()] == ["a"]
    assert traffic.writes() == [post] and traffic.reads() == [get] and traffic.recent(1.0) == 2


async def test_faults_answer_instead_of_the_server_and_are_seeded(cluster: InProcessCluster) -> None:
    first = Conflicts(0.5, rng=random.Random(3))
    again = Conflicts(0.5, rng=random.Random(3))
    traffic = ControllerTraffic(cluster.http_faults, clock=cluster.clock, faults=[first])
    client = traffic_client(cluster, traffic)
    await client.create(CONFIGMAPS, {"metadata": {"name": "a"}})  # POST: not an update
    outcomes = []
    for i in range(12):
        try:
            await client.patch(CONFIGMAPS, "a", {"data": {"i": str(i)}})
            outcomes.append("ok")
        except Conflict:
            outcomes.append("409")
    assert outcomes == ["409" if again(Exchange("PATCH", "/x", {}, 0.0)) else "ok" for _ in range(12)]
    assert 0 < first.injected < 12
    injected = [e for e in traffic.exchanges if e.injected]
    assert len(injected) == first.injected and all(e.status == 409 for e in injected)
    assert len(cluster.http_faults.requests) == 1 + 12 - first.injected + 1  # the server never saw them

    failing = Failing(500, methods=("POST",), unless_path_contains="/events")
    traffic.faults[:] = [failing]
    with pytest.raises(InternalError):
        await client.create(CONFIGMAPS, {"metadata": {"name": "b"}})
    failing.active = False
    await client.create(CONFIGMAPS, {"metadata": {"name": "b"}})


async def test_hooks_run_around_writes_before_the_controller_sees_the_answer(cluster: InProcessCluster) -> None:
    seen: list[str] = []

    async def before(exchange: Exchange) -> None:
        seen.append(f"before {exchange.method} status={exchange.status}")
        await cluster.client.patch(CONFIGMAPS, "a", {"metadata": {"labels": {"racer": "yes"}}})

    async def after(exchange: Exchange) -> None:
        seen.append(f"after {exchange.method} status={exchange.status}")

    await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "a"}})
    stale = await cluster.client.get(CONFIGMAPS, "a")
    traffic = ControllerTraffic(cluster.http_faults, clock=cluster.clock, before_write=before, after_write=after)
    client = traffic_client(cluster, traffic)
    await client.get(CONFIGMAPS, "a")
    assert seen == []  # reads are not hooked
    stale["data"] = {"k": "v"}
    with pytest.raises(Conflict):  # the racer's write made the controller's copy stale
        await client.update(CONFIGMAPS, stale)
    assert seen == ["before PUT status=0", "after PUT status=409"]


async def test_leader_election_is_recorded_but_never_faulted_hooked_or_counted(cluster: InProcessCluster) -> None:
    hooked: list[Exchange] = []

    async def hook(exchange: Exchange) -> None:
        hooked.append(exchange)

    traffic = ControllerTraffic(
        cluster.http_faults, clock=cluster.clock, faults=[Failing(500)], before_write=hook, after_write=hook
    )
    client = traffic_client(cluster, traffic)
    lease = {"metadata": {"name": "me", "namespace": "kube-system"}, "spec": {"holderIdentity": "me"}}
    await client.create(LEASES, lease, namespace="kube-system")
    event = {"metadata": {"name": "me.1", "namespace": "kube-system"}, "reason": "LeaderElection",
             "involvedObject": {"kind": "Lease", "name": "me", "namespace": "kube-system"}}  # fmt: skip
    await client.create(EVENTS, event, namespace="kube-system")
    assert [e.housekeeping for e in traffic.exchanges] == [True, True]
    assert hooked == [] and traffic.writes() == [] and traffic.created() == [] and traffic.recent(1.0) == 0
    with pytest.raises(InternalError):
        await client.create(CONFIGMAPS, {"metadata": {"name": "a"}})
    assert len(hooked) == 0 and len(traffic.writes()) == 1  # faulted before any hook runs


async def test_a_burst_at_one_instant_is_parked_on_the_clock(cluster: InProcessCluster) -> None:
    traffic = ControllerTraffic(cluster.http_faults, clock=cluster.clock, faults=[Failing(500)], burst_limit=5)
    client = traffic_client(cluster, traffic)
    for _ in range(5):
        with pytest.raises(InternalError):
            await client.create(CONFIGMAPS, {"metadata": {"name": "a"}})
    assert traffic.bursts == 0
    clock = cluster.clock
    assert isinstance(clock, FakeClock)
    sixth = cluster.run_in_background(client.create(CONFIGMAPS, {"metadata": {"name": "a"}}))
    for _ in range(20):
        await clock.advance(0)
    assert traffic.bursts == 1 and not sixth.done()  # waiting for time to pass
    await clock.advance(traffic.park)
    for _ in range(20):
        await clock.advance(0)
    assert sixth.done() and isinstance(sixth.exception(), InternalError)


async def test_a_fault_rule_may_look_at_the_world_first(cluster: InProcessCluster) -> None:
    async def protect_labelled(exchange: Exchange) -> int | None:  # an async rule: reads the target first
        if exchange.method != "PATCH":
            return None
        target = await cluster.client.get(CONFIGMAPS, exchange.path.rsplit("/", 1)[1])
        return 409 if (target["metadata"].get("labels") or {}).get("protected") else None

    await cluster.create(CONFIGMAPS, "guarded", labels={"protected": "yes"})
    await cluster.create(CONFIGMAPS, "open")
    traffic = ControllerTraffic(cluster.http_faults, clock=cluster.clock, faults=[protect_labelled])
    client = traffic_client(cluster, traffic)
    with pytest.raises(Conflict):
        await client.patch(CONFIGMAPS, "guarded", {"data": {"k": "v"}})
    assert (await client.patch(CONFIGMAPS, "open", {"data": {"k": "v"}}))["data"] == {"k": "v"}
    assert [(e.status, e.injected) for e in traffic.exchanges] == [(409, True), (200, False)]
    assert (await cluster.client.get(CONFIGMAPS, "guarded")).get("data") is None  # the server never saw it


def test_a_request_body_that_is_not_json_reads_as_none() -> None:
    exchange = Exchange("PATCH", "/api/v1/namespaces/team/configmaps/a", {}, 0.0, body=bytearray(b"data:\n  k: v\n"))
    assert exchange.request_json() is None
    assert Exchange("GET", "/api/v1/namespaces/team/configmaps/a", {}, 0.0).request_json() is None
