"""Leader election on a Lease (client-go tools/leaderelection), on fake time.

Against the real API server (tests/runtime/_realapi.py); faults are injected by wrapping the client.
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
from kubeloop.runtime import LeaderElector, LeadershipLost, Metrics
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parent))
from _realapi import FlakyClient, real_cluster

LEASES = KindRegistry().by_kind("coordination.k8s.io", "Lease")
assert LEASES is not None


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client(tmp_path: Path, clock: FakeClock) -> AsyncIterator[FlakyClient]:
    async with real_cluster(tmp_path, clock, namespaces=("kube-system",)) as open_client:
        yield open_client(FlakyClient)


async def settle() -> None:
    for _ in range(200):
        await asyncio.sleep(0)


async def run_for(clock: FakeClock, seconds: float, step: float = 0.25) -> None:
    """Let fake time pass in small steps, letting in-process HTTP round-trips complete in between."""
    await settle()
    for _ in range(round(seconds / step)):
        await clock.advance(step)
        await settle()


class Candidate:
    def __init__(self, client: Client, clock: FakeClock, identity: str, **kw: Any) -> None:
        self.leading = asyncio.Event()
        self.stopped = 0
        self.work_cancelled = False
        self.leaders: list[str] = []
        self.metrics = Metrics()
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
            self.work_cancelled = True
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


async def lease(client: Client) -> dict[str, Any]:
    assert LEASES is not None
    return await client.get(LEASES, "ctrl", namespace="kube-system")


async def test_the_first_candidate_creates_the_lease_and_leads(client: Client, clock: FakeClock) -> None:
    a = Candidate(client, clock, "a")
    assert a.status() == 0
    a.start()
    await run_for(clock, 1)
    assert a.leading.is_set() and a.elector.is_leader()
    assert a.status() == 1
    spec = (await lease(client))["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert a.leaders == ["a"]
    await a.cancel()


async def test_a_renewing_leader_keeps_the_lease_against_other_candidates(
    client: Client, clock: FakeClock
) -> None:
    a, b = Candidate(client, clock, "a"), Candidate(client, clock, "b")
    a.start()
    await run_for(clock, 1)
    b.start()
    await run_for(clock, 60)
    assert a.elector.is_leader() and not b.leading.is_set()
    assert b.leaders == ["a"]
    assert (await lease(client))["spec"]["renewTime"] > "2023-11-14T22:13:40"  # renewed, not frozen
    await a.cancel()
    await b.cancel()


async def test_takeover_waits_a_full_lease_duration_after_the_record_stops_changing(
    client: Client, clock: FakeClock
) -> None:
    a, b = Candidate(client, clock, "a"), Candidate(client, clock, "b")
    a.start()
    await run_for(clock, 1)
    b.start()
    await run_for(clock, 1)  # b has seen a's record
    await a.cancel()  # a dies without releasing
    assert a.work_cancelled and a.stopped == 1
    await run_for(clock, 12)
    assert not b.leading.is_set()  # 15 s have not passed since b last saw the record change
    await run_for(clock, 10)
    assert b.leading.is_set()
    spec = (await lease(client))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert b.leaders == ["a", "b"]
    await b.cancel()


async def test_release_on_cancel_hands_over_at_once(client: Client, clock: FakeClock) -> None:
    a = Candidate(client, clock, "a", release_on_cancel=True)
    b = Candidate(client, clock, "b")
    a.start()
    await run_for(clock, 1)
    b.start()
    await run_for(clock, 1)
    await a.cancel()
    spec = (await lease(client))["spec"]
    assert spec.get("holderIdentity") in (None, "") and spec["leaseDurationSeconds"] == 1
    await run_for(clock, 5)  # one retry period plus jitter, far less than the 15 s lease
    assert b.leading.is_set()
    await b.cancel()


async def test_a_leader_that_cannot_renew_within_the_deadline_stops_leading(
    client: FlakyClient, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await run_for(clock, 1)
    assert a.leading.is_set()
    client.down = True
    await run_for(clock, 8)
    assert a.elector.is_leader() and a.stopped == 0  # still within the renew deadline
    await run_for(clock, 6)
    assert a.task is not None and a.task.done()
    with pytest.raises(LeadershipLost):
        a.task.result()
    assert a.work_cancelled and a.stopped == 1
    assert a.status() == 0


async def test_a_leader_whose_lease_was_taken_loses_on_409_and_stops(
    client: Client, clock: FakeClock
) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await run_for(clock, 1)
    current = await lease(client)
    current["spec"]["holderIdentity"] = "intruder"
    assert LEASES is not None
    await client.update(LEASES, current, namespace="kube-system")
    await run_for(clock, 14)
    assert a.task is not None and a.task.done()
    assert isinstance(a.task.exception(), LeadershipLost)
    assert a.stopped == 1 and "intruder" in a.leaders


async def test_renewal_on_the_slow_path_is_counted(client: Client, clock: FakeClock) -> None:
    a = Candidate(client, clock, "a")
    a.start()
    await run_for(clock, 1)
    # An unrelated write (a label) moves the Lease's resourceVersion: the fast-path PUT gets 409 and
    # the GET + PUT slow path renews.
    assert LEASES is not None
    await client.patch(LEASES, "ctrl", {"metadata": {"labels": {"touched": "yes"}}}, namespace="kube-system")
    await run_for(clock, 3)
    assert a.elector.is_leader()
    assert a.metrics.sample("leader_election_slowpath_total", {"name": "ctrl"}) == 1
    await a.cancel()


async def test_the_watchdog_fails_a_leader_that_stopped_renewing(client: Client, clock: FakeClock) -> None:
    a = Candidate(client, clock, "a")
    assert a.elector.healthy()
    a.start()
    await run_for(clock, 1)
    assert a.elector.healthy()
    a.elector._observed_time -= 100  # as if renewals had been wedged for 100 s
    assert not a.elector.healthy(max_tolerable_expired_lease=10)
    await a.cancel()


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10, 10, 2), (15, 2.4, 2), (15, 10, 0.5)],
)
def test_timings_are_validated_as_upstream(
    client: Client, lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    with pytest.raises(ValueError):
        LeaderElector(
            client, name="x", namespace="ns", identity="me", lease_duration=lease_duration,
            renew_deadline=renew_deadline, retry_period=retry_period,
        )  # fmt: skip
