"""ReplicaSet controller: pods from the template, adoption/release, expectations, ranking, honest status."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.controllers._workload_pods import deletion_order, slow_start_batch
from kubeloop.testing import RandomFaults

from ._workload_world import NS, PODS, REPLICASETS, World, open_world, template


def replicaset(name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template(name), **spec},
    }  # fmt: skip


async def status_of(world: World, name: str = "web") -> dict[str, Any]:
    rs = await world.get(REPLICASETS, name)
    return dict(rs.get("status") or {})


async def wait_status(world: World, name: str = "web", *, step: float = 0.0, **expected: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        rs = await world.get(REPLICASETS, name)
        status = rs.get("status") or {}
        for key, value in expected.items():
            assert status.get(key, 0) == value, (key, status)
        assert status.get("observedGeneration") == rs["metadata"]["generation"]
        return status

    result: dict[str, Any] = await world.eventually(check, step=step)
    return result


async def test_creates_pods_from_the_template_with_a_controller_reference(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        rs = await world.client.create(REPLICASETS, replicaset(replicas=3))
        await world.eventually(lambda: _count(world, 3))
        pods = await world.pods(app="web")
        assert len(pods) == 3
        for pod in pods:
            assert pod["metadata"]["generateName"] == "web-"
            assert pod["metadata"]["name"].startswith("web-")
            assert pod["metadata"]["ownerReferences"] == [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
                "controller": True, "blockOwnerDeletion": True,
            }]  # fmt: skip
            assert pod["spec"]["containers"][0]["image"] == "nginx:1.25"
        status = await wait_status(world, replicas=3, fullyLabeledReplicas=3, readyReplicas=0)
        assert "availableReplicas" not in status  # Go omits zero omitempty counts


async def test_ready_and_available_counts_come_from_the_pods(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        await world.client.create(REPLICASETS, replicaset(replicas=3, minReadySeconds=10))
        await world.eventually(lambda: _count(world, 3))
        pods = await world.pods(app="web")
        await world.set_ready(pods[0])
        await world.set_ready(pods[1])
        await wait_status(world, replicas=3, readyReplicas=2, availableReplicas=0)
        # minReadySeconds on the injected clock: available only once ready for more than 10 s.
        await world.clock.advance(11)
        await wait_status(world, replicas=3, readyReplicas=2, availableReplicas=2)


async def test_scaling_down_deletes_unready_pods_before_ready_ones(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        await world.client.create(REPLICASETS, replicaset(replicas=4))
        await world.eventually(lambda: _count(world, 4))
        pods = sorted(await world.pods(app="web"), key=lambda p: p["metadata"]["name"])
        ready = {p["metadata"]["name"] for p in pods[:2]}
        for pod in pods[:2]:
            await world.set_ready(pod)
        await wait_status(world, readyReplicas=2)
        await world.client.scale(REPLICASETS, "web", 2, namespace=NS)
        await world.eventually(lambda: _count(world, 2))
        assert {p["metadata"]["name"] for p in await world.pods(app="web")} == ready
        await wait_status(world, replicas=2, readyReplicas=2)


async def test_adopts_matching_orphans_and_releases_pods_that_stop_matching(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        orphan = await world.client.create(PODS, {
            "metadata": {"name": "stray", "namespace": NS, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        })  # fmt: skip
        rs = await world.client.create(REPLICASETS, replicaset(replicas=2))
        await world.eventually(lambda: _count(world, 2))
        adopted = await world.get(PODS, "stray")
        assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
        assert adopted["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert adopted["metadata"]["ownerReferences"][0]["controller"] is True
        # Relabel it: the set releases it (ownerReference removed) and makes a replacement.
        await world.client.patch(PODS, "stray", {"metadata": {"labels": {"app": "other"}}}, namespace=NS)

        async def released() -> bool:
            pod = await world.get(PODS, "stray")
            return not pod["metadata"].get("ownerReferences") and len(await world.pods(app="web")) == 2

        await world.eventually(released)


async def test_pods_controlled_by_another_owner_are_never_stolen(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        other = replicaset("other", replicas=1, selector={"matchLabels": {"tier": "x"}})
        other["spec"]["template"]["metadata"]["labels"] = {"tier": "x"}
        other = await world.client.create(REPLICASETS, other)
        await world.client.create(PODS, {
            "metadata": {"name": "owned", "namespace": NS, "labels": {"app": "web", "tier": "x"}, "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "other", "uid": other["metadata"]["uid"],
                "controller": True}]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        })  # fmt: skip
        await world.client.create(REPLICASETS, replicaset(replicas=1))
        await world.eventually(lambda: _count(world, 2))  # "owned" + one of ours
        await world.settle()
        owned = await world.get(PODS, "owned")
        assert owned["metadata"]["ownerReferences"][0]["uid"] == other["metadata"]["uid"]
        assert len(await world.pods(app="web")) == 2


async def test_a_lagging_cache_never_causes_duplicate_creates(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        ctrl = world.controllers["replicaset"]
        await world.client.create(REPLICASETS, replicaset(replicas=5))
        await world.eventually(lambda: _count(world, 5))
        # Hammer the key while events are in flight: expectations hold the line.
        for _ in range(20):
            ctrl.controller.enqueue(_req("web"))
            await world.settle(2)
        await world.settle()
        assert len(await world.pods(app="web")) == 5
        assert world.ctl.count(verb="create", resource="pods") == 5


async def test_status_is_written_only_on_change_and_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        await world.client.create(REPLICASETS, replicaset(replicas=2))
        await world.eventually(lambda: _count(world, 2))
        await world.ready_all(app="web")
        await wait_status(world, replicas=2, readyReplicas=2, availableReplicas=2)
        n = await world.quiet_writes()
        assert n == 0, world.ctl.writes


async def test_failed_creates_stop_the_slow_start_and_set_replica_failure(tmp_path: Path) -> None:
    # The API refuses every pod create (as a quota would), until the test lifts it.
    quota = RandomFaults(1.0, rng=random.Random(1), codes=(500,), resources=["pods"], verbs=["create"])
    async with open_world(tmp_path, "replicaset", faults=quota) as world:
        await world.client.create(REPLICASETS, replicaset(replicas=8))

        async def failed() -> dict[str, Any]:
            status = await status_of(world)
            conds = [c for c in status.get("conditions") or () if c["type"] == "ReplicaFailure"]
            assert conds and conds[0]["reason"] == "FailedCreate" and conds[0]["status"] == "True"
            assert "injected fault" in conds[0]["message"]
            return status

        await world.eventually(failed)
        await world.settle()
        # Slow start: the first batch is one pod, and a failing batch ends the sync.
        creates = world.ctl.count(verb="create", resource="pods", ok_only=False)
        assert 1 <= creates <= 3
        quota.enabled = False

        async def recovered() -> bool:
            status = await status_of(world)
            return status.get("replicas") == 8 and not status.get("conditions")

        await world.eventually(recovered, step=1.0)
        assert len(await world.pods(app="web")) == 8


async def test_slow_start_batches_grow_and_stop_at_the_first_failing_batch() -> None:
    calls: list[int] = []

    async def create() -> None:
        calls.append(len(calls))
        if len(calls) == 5:
            raise RuntimeError("quota")

    done, err = await slow_start_batch(20, create)
    assert isinstance(err, RuntimeError)
    assert len(calls) == 1 + 2 + 4  # batches 1, 2, 4: the third holds the failure; no fourth batch
    assert done == 6


def test_deletion_ranking_follows_upstream_order() -> None:
    def pod(name: str, *, node: str = "", phase: str = "Running", ready: bool = False,
            cost: int | None = None, restarts: int = 0, created: str = "2024-01-01T00:00:00Z") -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "uid": name, "creationTimestamp": created}
        if cost is not None:
            meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
        conds = [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": created}]
        return {"metadata": meta, "spec": {"nodeName": node},
                "status": {"phase": phase, "conditions": conds,
                           "containerStatuses": [{"name": "c", "restartCount": restarts}]}}  # fmt: skip

    pods = [
        pod("ready-cheap", node="n1", ready=True, cost=-5),
        pod("ready", node="n1", ready=True),
        pod("unscheduled", phase="Pending"),
        pod("pending", node="n1", phase="Pending"),
        pod("unknown", node="n1", phase="Unknown"),
        pod("running-unready", node="n1"),
        pod("running-unready-restarts", node="n1", restarts=4),
    ]
    order = [p["metadata"]["name"] for p in deletion_order(pods, now=1_800_000_000.0)]
    assert order == ["unscheduled", "pending", "unknown", "running-unready-restarts", "running-unready",
                     "ready-cheap", "ready"]


async def _count(world: World, n: int) -> bool:
    return len(await world.pods(app="web")) == n


def _req(name: str) -> Any:
    from kubeloop.runtime import Request

    return Request(NS, name)
