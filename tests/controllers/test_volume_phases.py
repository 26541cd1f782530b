"""Which volumes a claim may bind to, the same for the PV controller and the scheduler.

Upstream: ``FindMatchingVolume`` (``pkg/controller/volume/persistentvolume/util/util.go``), shared by
the PV controller's ``findBestMatchForClaim`` and the scheduler's volume binder
(``pkg/scheduler/framework/plugins/volumebinding``): an unbound volume must be in phase
``Available`` (a new one is ``Pending`` until ``syncVolume`` marks it Available), while a volume
pre-bound to the claim (``IsVolumeBoundToClaim``: ``claimRef`` names it, uid or not) is returned
whatever its phase, class or labels, once size, volume mode, access modes and deletion allow it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubeloop.api import ApiError, InternalError
from kubeloop.controllers import SimulationOptions, add_simulated_cluster
from kubeloop.controllers._scheduler_resources import STORAGE_CLASSES
from kubeloop.testing import Write

from ._sim_world import NODES, NS, PODS, PVCS, PVS, World, condition, pod
from ._world import managed_cluster


class HoldVolumeStatus:
    """Refuses status writes to the named volumes (500), so they stay in the phase they have."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def error_for(self, write: Write) -> ApiError | None:
        if write.resource == "persistentvolumes" and write.subresource == "status" and write.name in self.names:
            return InternalError("held by the test")
        return None


class HoldUntilClaimed(HoldVolumeStatus):
    """Holds the named volumes' status (the controller's Available) until the claim side writes their
    ``claimRef``; the status write that follows (Bound) goes through."""

    def error_for(self, write: Write) -> ApiError | None:
        if write.resource == "persistentvolumes" and write.subresource is None:
            self.names.discard(write.name)
        return super().error_for(write)


@contextlib.asynccontextmanager
async def held_world(tmp_path: Path, hold: HoldVolumeStatus) -> AsyncIterator[World]:
    async with managed_cluster(tmp_path, faults=hold) as (cluster, ctl, manager):
        sim = add_simulated_cluster(manager, SimulationOptions(nodes=2))
        world = World(cluster=cluster, ctl=ctl, manager=manager, sim=sim)
        async with world.started():
            async def registered() -> bool:
                nodes = (await world.client.list(NODES)).get("items") or []
                return len(nodes) >= 2 and all(condition(n, "Ready").get("status") for n in nodes)

            await world.eventually(registered)
            await world.synced()
            yield world


def volume(name: str, *, class_name: str = "manual", size: str = "5Gi", claim_ref: dict[str, Any] | None = None,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                            "storageClassName": class_name, "persistentVolumeReclaimPolicy": "Retain",
                            "hostPath": {"path": f"/mnt/{name}"}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}


def claim(name: str, *, class_name: str = "manual", selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                            "resources": {"requests": {"storage": "1Gi"}}}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


async def _phase(world: World, resource: Any, name: str, namespace: str | None) -> str:
    obj = await world.maybe(resource, name, namespace)
    return str(((obj or {}).get("status") or {}).get("phase") or "")


async def test_the_controller_does_not_bind_a_pending_volume_until_it_is_available(tmp_path: Path) -> None:
    hold = HoldVolumeStatus("fresh")
    async with held_world(tmp_path, hold) as world:
        await world.create(PVS, volume("fresh"))
        await world.create(PVCS, claim("data"))
        await world.settle()
        await world.advance(30)  # past any retry backoff of the refused status write
        assert await _phase(world, PVS, "fresh", None) == "Pending"
        assert not (await world.get(PVS, "fresh", None))["spec"].get("claimRef")
        assert await _phase(world, PVCS, "data", NS) == "Pending"
        hold.names.clear()
        await world.advance(60)

        async def bound() -> bool:
            return await _phase(world, PVCS, "data", NS) == "Bound"

        await world.eventually(bound)
        assert (await world.get(PVCS, "data"))["spec"]["volumeName"] == "fresh"


async def test_the_scheduler_does_not_offer_a_pending_volume_either(tmp_path: Path) -> None:
    hold = HoldVolumeStatus("fresh")
    async with held_world(tmp_path, hold) as world:
        await world.create(STORAGE_CLASSES, {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "manual"},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
        await world.create(PVS, volume("fresh"))
        await world.create(PVCS, claim("data"))
        await world.create(PODS, pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]))

        async def waiting() -> str:
            cond = condition(await world.get(PODS, "db"), "PodScheduled")
            return str(cond.get("message") or "") if cond.get("reason") == "Unschedulable" else ""

        message = await world.eventually(waiting)
        assert message.startswith("0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")
        hold.names.clear()
        await world.advance(60)

        async def scheduled() -> str:
            return str((await world.get(PODS, "db"))["spec"].get("nodeName") or "")

        assert (await world.eventually(scheduled)).startswith("kubeloop-node-")
        assert (await world.get(PVCS, "data"))["spec"]["volumeName"] == "fresh"


async def test_a_volume_pre_bound_by_name_binds_in_any_phase_whatever_its_class_or_labels(tmp_path: Path) -> None:
    # The controller would mark it Available (syncVolume does so for a pre-bound volume too): held
    # until the claim side writes its claimRef, so that the claim binds it while it is Pending.
    async with held_world(tmp_path, HoldUntilClaimed("reserved")) as world:
        # A smaller Available volume that matches too: the pre-bound one still wins.
        await world.create(PVS, volume("small", size="1Gi", labels={"tier": "gold"}))
        await world.create(PVS, volume("reserved", class_name="other", claim_ref={"namespace": NS, "name": "data"}))
        assert await _phase(world, PVS, "reserved", None) == "Pending"
        await world.create(PVCS, claim("data", selector={"matchLabels": {"tier": "gold"}}))

        async def bound() -> bool:
            return await _phase(world, PVCS, "data", NS) == "Bound"

        await world.eventually(bound)
        data = await world.get(PVCS, "data")
        assert data["spec"]["volumeName"] == "reserved"
        reserved = await world.get(PVS, "reserved", None)
        assert reserved["spec"]["claimRef"]["uid"] == data["metadata"]["uid"]
        assert reserved["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert not (await world.get(PVS, "small", None))["spec"].get("claimRef")


async def test_a_failed_volume_without_a_claim_becomes_available(tmp_path: Path) -> None:
    # syncVolume: a volume with no claimRef is set Available, whatever its phase.
    async with held_world(tmp_path, HoldVolumeStatus()) as world:
        created = await world.create(PVS, volume("broken"))
        await world.client.update(PVS, {**created, "status": {"phase": "Failed"}}, subresource="status")

        async def available() -> bool:
            return await _phase(world, PVS, "broken", None) == "Available"

        await world.eventually(available)


async def test_a_volume_pre_bound_to_a_claim_not_yet_created_is_available_not_released(tmp_path: Path) -> None:
    # syncVolume: a claimRef without uid is a reservation, Available whether or not the claim exists;
    # only a volume bound (uid) to a claim that is gone is Released and reclaimed.
    async with held_world(tmp_path, HoldVolumeStatus()) as world:
        reserved = volume("reserved", claim_ref={"namespace": NS, "name": "data"})
        reserved["spec"]["persistentVolumeReclaimPolicy"] = "Delete"
        await world.create(PVS, reserved)

        async def available() -> bool:
            return await _phase(world, PVS, "reserved", None) == "Available"

        await world.eventually(available)
        await world.advance(30)
        assert await _phase(world, PVS, "reserved", None) == "Available"
        await world.create(PVCS, claim("data"))

        async def bound() -> bool:
            return await _phase(world, PVCS, "data", NS) == "Bound"

        await world.eventually(bound, step=0.1)
        assert (await world.get(PVCS, "data"))["spec"]["volumeName"] == "reserved"


class HoldClaimWrites:
    """Refuses the controllers' writes to the named claims (500), so no binding completes."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def error_for(self, write: Write) -> ApiError | None:
        if write.resource == "persistentvolumeclaims" and write.name in self.names:
            return InternalError("held by the test")
        return None


async def test_the_scheduler_retrying_after_its_bind_timeout_reuses_the_volume_it_pre_bound(tmp_path: Path) -> None:
    # FindMatchingVolume returns a volume whose claimRef names the claim with its uid (IsVolumeBoundToClaim):
    # the scheduler's own pre-bind of an attempt that timed out is found again, not doubled by another volume.
    hold = HoldClaimWrites("data")
    async with held_world(tmp_path, hold) as world:
        await world.create(STORAGE_CLASSES, {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "manual"},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
        await world.create(PVS, volume("first", size="2Gi"))
        await world.create(PVS, volume("second"))

        async def available() -> bool:
            return all([await _phase(world, PVS, name, None) == "Available" for name in ("first", "second")])

        await world.eventually(available)
        await world.create(PVCS, claim("data"))
        await world.create(PODS, pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]))
        uid = (await world.get(PVCS, "data"))["metadata"]["uid"]

        async def pre_bound() -> bool:
            return ((await world.get(PVS, "first", None))["spec"].get("claimRef") or {}).get("uid") == uid

        await world.eventually(pre_bound)
        await world.advance(600)  # the scheduler's bind timeout: it gives the node up and tries again

        async def gave_up() -> bool:
            return condition(await world.get(PODS, "db"), "PodScheduled").get("reason") == "SchedulerError"

        await world.eventually(gave_up)
        await world.advance(1)
        await world.advance(1)
        assert not (await world.get(PVS, "second", None))["spec"].get("claimRef")
        hold.names.clear()

        async def scheduled() -> str:
            return str((await world.get(PODS, "db"))["spec"].get("nodeName") or "")

        assert (await world.eventually(scheduled, step=1.0)).startswith("kubeloop-node-")
        assert (await world.get(PVCS, "data"))["spec"]["volumeName"] == "first"
        assert not (await world.get(PVS, "second", None))["spec"].get("claimRef")
