"""Leader election on a Lease (client-go tools/leaderelection), on fake time.

Against the real API server (tests/client/_realapi.py); faults are injected by wrapping the client.
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import KindRegistry
from kubeloop.client import Client
from kubeloop.runtime import EVENTS, LeaderElector, LeadershipLost, Metrics
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, FlakyClient, real_cluster

LEASES = KindRegistry().by_kind("coordination.k8s.io", "Lease")
assert LEASES is not None


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def cluster(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, clock, namespaces=("kube-system",)) as c:
        yield c


@pytest.fixture
def client(cluster: Cluster) -> FlakyClient:
    c: FlakyClient = cluster.client(FlakyClient)
    return c


class Candidate:
    def __init__(self, client: Client, clock: FakeClock, identity: str, **kw: Any) -> None:
        self.leading = asyncio.Event()
        self.stopped = 0
        self.work_cancelled_at: float | None = None
        self.leaders: list[str] = []
        self.metrics = Metrics()
        self.clock = clock
        self.elector = LeaderElector(
            client, name="ctrl", namespace="kube-system", identity=identity, clock=clock,
            rng=random.Random(7), metrics=self.metrics, on_started_leading=self._lead,
            on_stopped_leading=self._stop, on_new_leader=self.leaders.append, **kw,
        )  # fmt: skip
        self.task: asyncio.Task[None] | None = None

    async def _lead(self) -> None:
        self.leading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled_at = self.clock.monotonic()
            raise

    def _stop(self) -> None:
        self.stopped += 1

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run())

    async def cancel(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    def status(self) -> float | None:
        return self.metrics.sample("leader_election_master_status", {"name": "ctrl"})


async def a_leads_then_b_starts(
    cluster: Cluster, client: Client, clock: FakeClock, **a_options: Any
) -> tuple[Candidate, Candidate]:
    """Candidate "a" (with ``a_options``) starts and takes the lease; a second later "b" starts too."""
    a, b = Candidate(client, clock, "a", **a_options), Candidate(client, clock, "b")
    a.start()
    await cluster.run_for(1)
    b.start()
    return a, b


async def lease(client: Client) -> dict[str, Any]:
    assert LEASES is not None
    return await client.get(LEASES, "ctrl", namespace="kube-system")


async def lease_events(client: Client) -> list[str]:
    events = (await client.list(EVENTS, namespace="kube-system"))["items"]
    assert all(e["reason"] == "LeaderElection" and e["involvedObject"]["kind"] == "Lease" for e in events)
    return [e["message"] for e in sorted(events, key=lambda e: e["metadata"]["name"])]


async def test_the_first_candidate_creates_the_lease_and_leads(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    assert a.status() == 0
    a.start()
    await cluster.run_for(1)
    assert a.leading.is_set() and a.elector.is_leader()
    assert a.status() == 1
    spec = (await lease(client))["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert a.leaders == ["a"]
    await a.cancel()


async def test_a_new_leader_renews_at_once_as_client_go_does(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await cluster.settle()  # no fake time passes
    writes = [r.method for r in cluster.app.requests if "/leases" in r.path and r.method in ("POST", "PUT")]
    assert writes == ["POST", "PUT"]  # acquired by creating the Lease, then renewed immediately
    await a.cancel()


async def test_becoming_and_stopping_leading_are_events_on_the_lease(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await cluster.run_for(1)
    assert await lease_events(client) == ["a became leader"]
    event = (await client.list(EVENTS, namespace="kube-system"))["items"][0]
    assert event["type"] == "Normal" and event["involvedObject"]["name"] == "ctrl"
    assert event["involvedObject"]["uid"] == (await lease(client))["metadata"]["uid"]
    await a.cancel()
    assert await lease_events(client) == ["a became leader", "a stopped leading"]


async def test_a_renewing_leader_keeps_the_lease_against_other_candidates(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a, b = await a_leads_then_b_starts(cluster, client, clock)
    await cluster.run_for(60)
    assert a.elector.is_leader() and not b.leading.is_set()
    assert b.leaders == ["a"]
    assert (await lease(client))["spec"]["renewTime"] > "2023-11-14T22:13:40"  # renewed, not frozen
    await a.cancel()
    await b.cancel()


async def test_on_stopped_leading_is_called_even_by_a_candidate_that_never_led(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a, b = await a_leads_then_b_starts(cluster, client, clock)
    await cluster.run_for(3)
    await b.cancel()  # client-go Run defers OnStoppedLeading unconditionally
    assert b.stopped == 1 and not b.leading.is_set()
    assert await lease_events(client) == ["a became leader"]  # b never led: no "stopped leading"
    await a.cancel()


async def test_takeover_waits_a_full_lease_duration_after_the_record_stops_changing(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a, b = await a_leads_then_b_starts(cluster, client, clock)
    await cluster.run_for(1)  # b has seen a's record
    await a.cancel()  # a dies without releasing
    assert a.work_cancelled_at is not None and a.stopped == 1
    await cluster.run_for(12)
    assert not b.leading.is_set()  # 15 s have not passed since b last saw the record change
    await cluster.run_for(10)
    assert b.leading.is_set()
    spec = (await lease(client))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert b.leaders == ["a", "b"]
    assert await lease_events(client) == ["a became leader", "a stopped leading", "b became leader"]
    await b.cancel()


async def test_release_on_cancel_hands_over_at_once(cluster: Cluster, client: Client, clock: FakeClock) -> None:
    a, b = await a_leads_then_b_starts(cluster, client, clock, release_on_cancel=True)
    await cluster.run_for(1)
    await a.cancel()
    spec = (await lease(client))["spec"]
    assert spec.get("holderIdentity") in (None, "") and spec["leaseDurationSeconds"] == 1
    await cluster.run_for(5)  # one retry period plus jitter, far less than the 15 s lease
    assert b.leading.is_set()
    await b.cancel()


async def test_a_leader_that_cannot_renew_stops_its_work_within_the_renew_deadline(
    cluster: Cluster, client: FlakyClient, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await cluster.run_for(0.25)
    assert a.leading.is_set()
    last_renewal = a.elector._observed_time
    client.down = True  # the next renewal, one retry period later, is the first to fail
    first_failure = last_renewal + a.elector.retry_period
    await cluster.run_for(first_failure + 8 - clock.monotonic())
    assert a.elector.is_leader() and a.stopped == 0  # still within the renew deadline
    await cluster.run_for(first_failure + 10.25 - clock.monotonic())
    assert a.task is not None and a.task.done()
    with pytest.raises(LeadershipLost):
        a.task.result()
    assert a.work_cancelled_at is not None
    assert a.work_cancelled_at - first_failure <= a.elector.renew_deadline
    # ... so the work stopped before any other candidate could take over the lease.
    assert a.work_cancelled_at - last_renewal < a.elector.lease_duration
    assert a.stopped == 1 and a.status() == 0 and a.elector.lost


async def test_a_leader_whose_lease_was_taken_loses_on_409_and_stops(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await cluster.run_for(1)
    current = await lease(client)
    current["spec"]["holderIdentity"] = "intruder"
    assert LEASES is not None
    await client.update(LEASES, current, namespace="kube-system")
    await cluster.run_for(14)
    assert a.task is not None and a.task.done()
    assert isinstance(a.task.exception(), LeadershipLost)
    assert a.stopped == 1 and "intruder" in a.leaders


async def test_renewal_on_the_slow_path_is_counted(cluster: Cluster, client: Client, clock: FakeClock) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await cluster.run_for(1)
    # An unrelated write (a label) moves the Lease's resourceVersion: the fast-path PUT gets 409 and
    # the GET + PUT slow path renews.
    assert LEASES is not None
    await client.patch(LEASES, "ctrl", {"metadata": {"labels": {"touched": "yes"}}}, namespace="kube-system")
    await cluster.run_for(3)
    assert a.elector.is_leader()
    assert a.metrics.sample("leader_election_slowpath_total", {"name": "ctrl"}) == 1
    await a.cancel()


async def test_the_watchdog_fails_a_leader_that_stopped_renewing(
    cluster: Cluster, client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    assert a.elector.healthy()
    a.start()
    await cluster.run_for(1)
    assert a.elector.healthy()
    a.elector._observed_time -= 100  # as if renewals had been wedged for 100 s
    assert not a.elector.healthy(max_tolerable_expired_lease=10)
    await a.cancel()


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10, 10, 2), (15, 2.4, 2), (15, 10, 0.5)],
)
async def test_timings_are_validated_as_upstream(
    client: Client, lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    with pytest.raises(ValueError):
        LeaderElector(
            client, name="x", namespace="ns", identity="me", lease_duration=lease_duration,
            renew_deadline=renew_deadline, retry_period=retry_period,
        )  # fmt: skip
