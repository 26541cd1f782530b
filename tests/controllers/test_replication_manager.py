"""The ReplicationManager: the ReplicaSet controller on core/v1 ReplicationControllers.

Upstream (release 1.32): k/k ``pkg/controller/replication/replication_controller.go`` (the ReplicaSet
controller built with kind ``v1 ReplicationController`` and Events from ``replication-controller``) and
``conversion.go`` (an RC's label-map selector becomes a LabelSelector's ``matchLabels``);
``pkg/registry/core/replicationcontroller/strategy.go`` ``DefaultGarbageCollectionPolicy`` (Orphan for
core/v1 when the delete names no policy); the garbage collector for cascades.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.controllers import GarbageCollector
from kubeloop.controllers._workload_kinds import REPLICATIONCONTROLLERS
from kubeloop.testing import RandomFaults

from ._workload_world import NS, PODS, REPLICASETS, World, open_world, template

EVENTS = ResourceInfo("", "v1", "Event", "events", "event", True)


def rc(name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    """An RC as old manifests write it: no selector (SetDefaults_ReplicationController takes the template's labels)."""
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "template": template(name), **spec}}


async def _count(world: World, n: int, app: str = "web") -> bool:
    return len(await world.pods(app=app)) == n


async def wait_status(world: World, name: str = "web", **expected: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        obj = await world.get(REPLICATIONCONTROLLERS, name)
        status = obj.get("status") or {}
        for key, value in expected.items():
            assert status.get(key, 0) == value, (key, status)
        assert status.get("observedGeneration") == obj["metadata"]["generation"]
        return dict(status)

    result: dict[str, Any] = await world.eventually(check)
    return result


async def test_creates_pods_controlled_by_the_rc_and_reports_status(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        created = await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=3))
        assert created["spec"]["selector"] == {"app": "web"}
        await world.eventually(lambda: _count(world, 3))
        for pod in await world.pods(app="web"):
            assert pod["metadata"]["generateName"] == "web-"
            assert pod["metadata"]["ownerReferences"] == [{
                "apiVersion": "v1", "kind": "ReplicationController", "name": "web",
                "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        await wait_status(world, replicas=3, fullyLabeledReplicas=3, readyReplicas=0)
        pods = await world.pods(app="web")
        await world.set_ready(pods[0])
        await world.set_ready(pods[1])
        await wait_status(world, replicas=3, readyReplicas=2, availableReplicas=2)


async def test_scale_up_and_down_through_the_scale_subresource(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=1))
        await world.eventually(lambda: _count(world, 1))
        await world.client.scale(REPLICATIONCONTROLLERS, "web", 4, namespace=NS)
        await world.eventually(lambda: _count(world, 4))
        status = await wait_status(world, replicas=4)
        assert status["observedGeneration"] == 2
        await world.client.scale(REPLICATIONCONTROLLERS, "web", 0, namespace=NS)
        await world.eventually(lambda: _count(world, 0))
        await wait_status(world, replicas=0)


async def test_a_deleted_pod_is_replaced(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=2))
        await world.eventually(lambda: _count(world, 2))
        victim = (await world.pods(app="web"))[0]["metadata"]["name"]
        await world.client.delete(PODS, victim, namespace=NS)

        async def replaced() -> bool:
            names = {p["metadata"]["name"] for p in await world.pods(app="web")}
            return len(names) == 2 and victim not in names

        await world.eventually(replaced)


async def test_adopts_an_orphan_the_label_map_selects_and_releases_it_when_relabelled(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        stray = await world.client.create(PODS, {
            "metadata": {"name": "stray", "namespace": NS, "labels": {"app": "web", "extra": "yes"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        owner = await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=2))
        await world.eventually(lambda: _count(world, 2))
        adopted = await world.get(PODS, "stray")
        assert adopted["metadata"]["uid"] == stray["metadata"]["uid"]
        ref = adopted["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["uid"], ref["controller"]) == ("ReplicationController", owner["metadata"]["uid"], True)

        await world.client.patch(PODS, "stray", {"metadata": {"labels": {"app": "other"}}}, namespace=NS)

        async def released() -> bool:
            pod = await world.get(PODS, "stray")
            return not pod["metadata"].get("ownerReferences") and len(await world.pods(app="web")) == 2

        await world.eventually(released)


async def test_a_pod_selected_by_a_replicaset_too_is_left_to_its_controller(tmp_path: Path) -> None:
    """A pod controlled by a ReplicaSet with the same labels is not the RC's to count or adopt."""
    async with open_world(tmp_path, "replicaset", "replicationcontroller") as world:
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "set", "namespace": NS},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}}
        await world.client.create(REPLICASETS, rs)
        await world.eventually(lambda: _count(world, 1))
        await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=2))
        await world.eventually(lambda: _count(world, 3))
        await world.settle()
        kinds = sorted(p["metadata"]["ownerReferences"][0]["kind"] for p in await world.pods(app="web"))
        assert kinds == ["ReplicaSet", "ReplicationController", "ReplicationController"]
        await wait_status(world, replicas=2)


async def test_events_name_the_rc_and_come_from_the_replication_controller(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=2))
        await world.eventually(lambda: _count(world, 2))

        async def recorded(reason: str, n: int) -> list[dict[str, Any]]:
            items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
            found = [e for e in items if e["reason"] == reason and e["involvedObject"]["name"] == "web"]
            return found if len(found) == n else []

        created = await world.eventually(lambda: recorded("SuccessfulCreate", 2))
        names = {p["metadata"]["name"] for p in await world.pods(app="web")}
        assert {e["message"] for e in created} == {f"Created pod: {n}" for n in names}
        for event in created:
            assert (event["involvedObject"]["kind"], event["involvedObject"]["apiVersion"]) == ("ReplicationController", "v1")
            assert event["source"]["component"] == "replication-controller"
        await world.client.scale(REPLICATIONCONTROLLERS, "web", 1, namespace=NS)
        deleted = await world.eventually(lambda: recorded("SuccessfulDelete", 1))
        assert deleted[0]["message"].startswith("Deleted pod: web-")


async def test_a_failed_create_sets_the_replica_failure_condition_until_creates_succeed(tmp_path: Path) -> None:
    """Every pod create refused (as a quota would): ReplicaFailure/FailedCreate, cleared once creates work."""
    refuse = RandomFaults(1.0, rng=random.Random(1), codes=(500,), resources=["pods"], verbs=["create"])
    async with open_world(tmp_path, "replicationcontroller", faults=refuse) as world:
        await world.client.create(REPLICATIONCONTROLLERS, rc(replicas=2))

        async def failed() -> dict[str, Any] | None:
            obj = await world.get(REPLICATIONCONTROLLERS, "web")
            for condition in (obj.get("status") or {}).get("conditions") or []:
                if condition["type"] == "ReplicaFailure":
                    return dict(condition)
            return None

        condition = await world.eventually(failed)
        assert (condition["status"], condition["reason"]) == ("True", "FailedCreate")
        assert "injected fault" in condition["message"]
        refuse.enabled = False

        async def recovered() -> bool:
            status = (await world.get(REPLICATIONCONTROLLERS, "web")).get("status") or {}
            return status.get("replicas") == 2 and not status.get("conditions")

        await world.eventually(recovered, step=1.0)


async def _start_gc(world: World) -> GarbageCollector:
    gc = GarbageCollector(world.client, clock=world.clock, workers=2)
    world.cluster.run_in_background(gc.run())
    await world.eventually(lambda: _true(gc.has_synced()))
    return gc


async def _true(value: bool) -> bool:
    return value


async def test_background_delete_removes_the_pods_and_a_delete_naming_no_policy_orphans_them(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicationcontroller") as world:
        await _start_gc(world)
        await world.client.create(REPLICATIONCONTROLLERS, rc("kept", replicas=2))
        await world.client.create(REPLICATIONCONTROLLERS, rc("gone", replicas=2))
        await world.eventually(lambda: _count(world, 2, "kept"))
        await world.eventually(lambda: _count(world, 2, "gone"))

        # kubectl delete sends propagationPolicy=Background: the GC deletes the RC's pods.
        await world.client.delete(REPLICATIONCONTROLLERS, "gone", namespace=NS, propagation_policy="Background")
        await world.eventually(lambda: _count(world, 0, "gone"))

        # No policy: core/v1 RCs default to OrphanDependents; the pods stay, without their ownerReference.
        await world.client.delete(REPLICATIONCONTROLLERS, "kept", namespace=NS)
        await world.eventually(lambda: world.cluster.gone(REPLICATIONCONTROLLERS, "kept", NS))

        async def orphaned() -> bool:
            pods = await world.pods(app="kept")
            return len(pods) == 2 and all(not p["metadata"].get("ownerReferences") for p in pods)

        await world.eventually(orphaned)
