"""Volumes: default StorageClass, dynamic provisioning, static binding, reclaim, in-use protection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import STORAGE_CLASSES

from ._sim_world import PODS, PVCS, PVS, World, open_world, pod


def claim(name: str, *, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


async def _bound(world: World, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        pvc = await world.get(PVCS, name)
        return pvc if (pvc.get("status") or {}).get("phase") == "Bound" else None

    result: dict[str, Any] = await world.eventually(check)
    return result


async def _gone(world: World, resource: Any, name: str, namespace: str | None = "ns") -> None:
    async def check() -> bool:
        return await world.maybe(resource, name, namespace) is None

    await world.eventually(check)


async def test_default_storage_class_is_created_when_absent(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        sc = await world.eventually(lambda: world.maybe(STORAGE_CLASSES, "standard", None))
        assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
        assert sc["provisioner"] == "kubeloop.dev/hostpath"
        assert sc["reclaimPolicy"] == "Delete"


async def test_claim_is_provisioned_and_bound_with_upstream_annotations(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PVCS, claim("data", size="2Gi"))
        pvc = await _bound(world, "data")
        uid = pvc["metadata"]["uid"]
        assert pvc["spec"]["storageClassName"] == "standard"
        assert pvc["spec"]["volumeName"] == f"pvc-{uid}"
        assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        assert pvc["status"]["capacity"] == {"storage": "2Gi"}
        assert "kubernetes.io/pvc-protection" in pvc["metadata"]["finalizers"]
        pv = await world.get(PVS, f"pvc-{uid}", None)
        assert pv["status"]["phase"] == "Bound"
        assert pv["spec"]["claimRef"]["uid"] == uid
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "kubeloop.dev/hostpath"
        assert "kubernetes.io/pv-protection" in pv["metadata"]["finalizers"]
        assert await world.quiet_writes() == 0


async def test_static_volume_that_matches_is_bound_and_retained_after_the_claim_goes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        for name, size in (("small", "1Gi"), ("fits", "5Gi"), ("large", "50Gi")):
            await world.create(PVS, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                                     "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                                              "storageClassName": "manual", "hostPath": {"path": f"/d/{name}"}}})

        async def all_available() -> bool:
            # A new volume is Pending until the controller marks it Available, and only Available
            # volumes are offered to a claim (FindMatchingVolume).
            phases = {pv["metadata"]["name"]: (pv.get("status") or {}).get("phase")
                      for pv in (await world.client.list(PVS)).get("items") or ()}
            return all(phases.get(n) == "Available" for n in ("small", "fits", "large"))

        await world.eventually(all_available)
        await world.create(PVCS, claim("db", size="3Gi", storageClassName="manual"))
        pvc = await _bound(world, "db")
        assert pvc["spec"]["volumeName"] == "fits"
        assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"

        async def available() -> bool:
            return (await world.get(PVS, "small", None))["status"]["phase"] == "Available"

        await world.eventually(available)
        await world.client.delete(PVCS, "db", namespace="ns")
        await _gone(world, PVCS, "db")

        async def released() -> dict[str, Any] | None:
            pv = await world.get(PVS, "fits", None)
            return pv if pv["status"]["phase"] == "Released" else None

        pv = await world.eventually(released)
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        await world.create(PVCS, claim("again", size="3Gi", storageClassName="manual"))
        assert (await _bound(world, "again"))["spec"]["volumeName"] == "large"


async def test_deleting_a_claim_deletes_its_provisioned_volume(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PVCS, claim("scratch"))
        volume = (await _bound(world, "scratch"))["spec"]["volumeName"]
        await world.client.delete(PVCS, "scratch", namespace="ns")
        await _gone(world, PVCS, "scratch")
        await _gone(world, PVS, volume, None)


async def test_claim_in_use_by_a_pod_is_kept_until_the_pod_is_gone(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PVCS, claim("data"))
        volume = (await _bound(world, "data"))["spec"]["volumeName"]
        await world.create(PODS, pod("user", terminationGracePeriodSeconds=5, volumes=[
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]))
        await world.client.delete(PVCS, "data", namespace="ns")
        await world.settle(60)
        held = await world.get(PVCS, "data")
        assert held["metadata"]["deletionTimestamp"]
        assert held["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
        assert (await world.get(PVS, volume, None))["status"]["phase"] == "Bound"
        await world.client.delete(PODS, "user", namespace="ns")
        await world.advance(5)
        await _gone(world, PODS, "user")
        await _gone(world, PVCS, "data")
        await _gone(world, PVS, volume, None)
