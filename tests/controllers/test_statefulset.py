"""StatefulSet controller: ordered identities, PVCs and retention, partitioned rollouts, honest status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._workload_world import NS, PODS, PVCS, STATEFULSETS, World, names, open_world, template


def statefulset(name: str = "db", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": template(name), **spec},
    }  # fmt: skip


CLAIMS = [{"metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]  # fmt: skip


async def pod_names(world: World) -> list[str]:
    return names(await world.pods(app="db"))


async def settled(world: World, **expected: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        sts = await world.get(STATEFULSETS, "db")
        status = sts.get("status") or {}
        assert status.get("observedGeneration") == sts["metadata"]["generation"], status
        for key, value in expected.items():
            assert status.get(key, 0) == value, (key, status)
        return status

    result: dict[str, Any] = await world.eventually(check)
    return result


async def test_ordered_ready_creates_one_pod_at_a_time_and_waits_for_ready(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        await world.client.create(STATEFULSETS, statefulset(replicas=3))
        await world.eventually(lambda: _names_are(world, ["db-0"]))
        await world.settle()
        assert await pod_names(world) == ["db-0"]  # db-1 waits for db-0 to be Running and Ready
        pod = await world.get(PODS, "db-0")
        assert pod["spec"]["hostname"] == "db-0" and pod["spec"]["subdomain"] == "db"
        assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
        assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"
        await world.set_ready("db-0")
        await world.eventually(lambda: _names_are(world, ["db-0", "db-1"]))
        await world.set_ready("db-1")
        await world.eventually(lambda: _names_are(world, ["db-0", "db-1", "db-2"]))
        await world.set_ready("db-2")
        status = await settled(world, replicas=3, readyReplicas=3, availableReplicas=3, currentReplicas=3,
                               updatedReplicas=3)  # fmt: skip
        assert status["currentRevision"] == status["updateRevision"]
        assert status["updateRevision"] == (await world.get(PODS, "db-2"))["metadata"]["labels"]["controller-revision-hash"]


async def test_parallel_creates_every_pod_at_once(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        await world.client.create(STATEFULSETS, statefulset(replicas=3, podManagementPolicy="Parallel"))
        await world.eventually(lambda: _names_are(world, ["db-0", "db-1", "db-2"]))
        await settled(world, replicas=3, readyReplicas=0)


async def test_scale_down_removes_the_highest_ordinal_first(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(replicas=3))
        await settled(world, replicas=3, readyReplicas=3)
        seen: list[list[str]] = []
        await world.client.scale(STATEFULSETS, "db", 1, namespace=NS)

        async def shrunk() -> bool:
            current = await pod_names(world)
            if not seen or seen[-1] != current:
                seen.append(current)
            return current == ["db-0"]

        await world.eventually(shrunk)
        assert ["db-0", "db-2"] not in seen  # db-1 never goes before db-2
        await settled(world, replicas=1, readyReplicas=1)


async def test_claims_come_from_templates_and_retention_uses_owner_references(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        world.start_kubelet()
        policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
        sts = await world.client.create(STATEFULSETS, statefulset(
            replicas=2, volumeClaimTemplates=CLAIMS, persistentVolumeClaimRetentionPolicy=policy))
        await settled(world, replicas=2, readyReplicas=2)
        claims = {c["metadata"]["name"]: c for c in await world.items(PVCS)}
        assert sorted(claims) == ["data-db-0", "data-db-1"]
        assert claims["data-db-0"]["metadata"]["labels"]["app"] == "db"
        assert [r["uid"] for r in claims["data-db-1"]["metadata"]["ownerReferences"]] == [sts["metadata"]["uid"]]
        pod = await world.get(PODS, "db-1")
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "data")
        assert volume["persistentVolumeClaim"]["claimName"] == "data-db-1"
        # Scale down: before db-1 goes, its claim is handed to the pod (GC deletes it after the pod).
        await world.client.scale(STATEFULSETS, "db", 1, namespace=NS)
        await world.eventually(lambda: _names_are(world, ["db-0"]))
        claim = await world.get(PVCS, "data-db-1")
        assert [(r["kind"], r["uid"]) for r in claim["metadata"]["ownerReferences"]] == [("Pod", pod["metadata"]["uid"])]
        kept = await world.get(PVCS, "data-db-0")
        assert [r["kind"] for r in kept["metadata"]["ownerReferences"]] == ["StatefulSet"]


async def test_retain_policy_leaves_claims_unowned(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(replicas=2, volumeClaimTemplates=CLAIMS))
        await settled(world, replicas=2, readyReplicas=2)
        await world.client.scale(STATEFULSETS, "db", 1, namespace=NS)
        await world.eventually(lambda: _names_are(world, ["db-0"]))
        for claim in await world.items(PVCS):
            assert not claim["metadata"].get("ownerReferences")


async def test_rolling_update_goes_from_the_highest_ordinal_down_to_the_partition(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(replicas=3))
        first = await settled(world, replicas=3, readyReplicas=3)
        await world.client.patch(STATEFULSETS, "db", {"spec": {
            "template": template("db", image="nginx:1.26"),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}}, namespace=NS)

        async def partitioned() -> dict[str, Any]:
            images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in await world.pods(app="db")}
            assert images == {"db-0": "nginx:1.25", "db-1": "nginx:1.26", "db-2": "nginx:1.26"}, images
            return await settled(world, replicas=3, readyReplicas=3, updatedReplicas=2, currentReplicas=1)

        status = await world.eventually(partitioned)
        assert status["currentRevision"] == first["currentRevision"] != status["updateRevision"]
        # A deleted pod below the partition comes back on the current (old) revision.
        await world.client.delete(PODS, "db-0", namespace=NS)
        await world.eventually(lambda: _image_of(world, "db-0", "nginx:1.25"))
        await world.client.patch(STATEFULSETS, "db", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}},
                                 namespace=NS)  # fmt: skip
        done = await world.eventually(lambda: _finished(world))
        assert done["currentRevision"] == done["updateRevision"] == status["updateRevision"]


async def test_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "statefulset") as world:
        world.start_kubelet()
        await world.client.create(STATEFULSETS, statefulset(replicas=2, volumeClaimTemplates=CLAIMS))
        await settled(world, replicas=2, readyReplicas=2)
        assert await world.quiet_writes() == 0


async def _names_are(world: World, expected: list[str]) -> bool:
    return await pod_names(world) == expected


async def _image_of(world: World, name: str, image: str) -> bool:
    pod = await world.maybe(PODS, name)
    return pod is not None and not pod["metadata"].get("deletionTimestamp") and pod["spec"]["containers"][0]["image"] == image


async def _finished(world: World) -> dict[str, Any] | None:
    status = await settled(world, replicas=3, readyReplicas=3, updatedReplicas=3)
    images = {p["spec"]["containers"][0]["image"] for p in await world.pods(app="db")}
    return status if images == {"nginx:1.26"} and status["currentRevision"] == status["updateRevision"] else None



async def test_a_matching_orphan_pod_is_adopted_as_soon_as_it_appears(tmp_path: Path) -> None:
    # addPod: an orphan wakes every set whose selector matches it (no resync needed).
    async with open_world(tmp_path, "statefulset") as world:
        await world.client.create(STATEFULSETS, statefulset(replicas=1))
        await world.eventually(lambda: _names_are(world, ["db-0"]))
        await world.set_ready("db-0")
        await settled(world, replicas=1, readyReplicas=1)
        sts = await world.get(STATEFULSETS, "db")
        orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-7", "labels": {"app": "db"}},
                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        await world.client.create(PODS, orphan, namespace=NS)

        async def adopted_then_removed() -> bool:
            # Adopted (a controller reference to the set), then deleted: ordinal 7 is beyond replicas.
            pod = await world.maybe(PODS, "db-7")
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return True
            refs = pod["metadata"].get("ownerReferences") or []
            assert not refs or refs[0]["uid"] == sts["metadata"]["uid"]
            return False

        await world.eventually(adopted_then_removed)
        messages = [m for _, _, m in world.controllers["statefulset"].events.recorded]
        await world.eventually(lambda: _has(world, "delete Pod db-7 in StatefulSet db successful"))
        assert "create Pod db-0 in StatefulSet db successful" in messages


async def _has(world: World, message: str) -> bool:
    return any(m == message for _, _, m in world.controllers["statefulset"].events.recorded)
