"""Delayed volume binding (StorageClass ``volumeBindingMode: WaitForFirstConsumer``), all through the API.

Upstream: the PV controller's ``syncUnboundClaim`` leaves a delayed claim Pending with a
``WaitForFirstConsumer`` Event until the scheduler's VolumeBinding plugin chose a node for the first
pod using it (``volume.kubernetes.io/selected-node``, or a static volume pre-bound in PreBind); the pod
is bound to its node once its claims are Bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import STORAGE_CLASSES
from kubeloop.testing import resource

from ._sim_world import NS, PODS, PVCS, PVS, World, condition, open_world, pod

EVENTS = resource("", "Event")
SELECTED = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


def delayed_class(name: str = "local", provisioner: str = "kubeloop.dev/hostpath") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"}


def claim(name: str, class_name: str = "local", size: str = "1Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                     "resources": {"requests": {"storage": size}}}}


def user(name: str, *claims: str, **spec: Any) -> dict[str, Any]:
    return pod(name, volumes=[{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims], **spec)


def node_volume(name: str, node: str, size: str = "5Gi", class_name: str = "local-static") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                     "local": {"path": f"/mnt/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": HOSTNAME, "operator": "In", "values": [node]}]}]}}}}


async def _claim_events(world: World, name: str) -> list[tuple[str, str, str, str]]:
    items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
    return [(e["type"], e["reason"], e["source"]["component"], e["message"]) for e in items
            if e["involvedObject"]["kind"] == "PersistentVolumeClaim" and e["involvedObject"]["name"] == name]


async def _until(world: World, resource: Any, name: str, check: Any, namespace: str | None = NS) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        obj = await world.maybe(resource, name, namespace)
        return obj if obj is not None and check(obj) else None

    result: dict[str, Any] = await world.eventually(probe)
    return result


def _phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


async def test_claim_waits_for_first_consumer_then_is_provisioned_on_the_pods_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(STORAGE_CLASSES, delayed_class())
        await world.create(PVCS, claim("data"))
        waiting = ("Normal", "WaitForFirstConsumer", "persistentvolume-controller",
                   "waiting for first consumer to be created before binding")

        async def told() -> bool:
            return waiting in await _claim_events(world, "data")

        await world.eventually(told)
        await world.settle(60)
        pending = await world.get(PVCS, "data")
        assert _phase(pending) == "Pending" and not pending["spec"].get("volumeName")
        assert SELECTED not in (pending["metadata"].get("annotations") or {})
        assert (await world.client.list(PVS)).get("items") == []
        # Recorded once here, not again on every reconcile.
        assert await world.quiet_writes() == 0

        await world.create(PODS, user("web", "data"))
        bound = await _until(world, PVCS, "data", lambda c: _phase(c) == "Bound")
        web = await _until(world, PODS, "web", lambda p: p["spec"].get("nodeName"))
        node = web["spec"]["nodeName"]
        assert bound["metadata"]["annotations"][SELECTED] == node
        pv = await world.get(PVS, bound["spec"]["volumeName"], None)
        assert pv["spec"]["claimRef"]["uid"] == bound["metadata"]["uid"]
        # The provisioned volume lives on the selected node.
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}]
        assert condition(web, "PodScheduled")["status"] == "True"
        assert await world.quiet_writes() == 0


async def _first_consumer_gone(world: World) -> str:
    """A delayed claim ``data`` whose first pod was placed, then deleted: the node its volume is on."""
    await world.create(STORAGE_CLASSES, delayed_class())
    await world.create(PVCS, claim("data"))
    await world.create(PODS, user("first", "data", terminationGracePeriodSeconds=0))
    node = str((await _until(world, PODS, "first", lambda p: p["spec"].get("nodeName")))["spec"]["nodeName"])
    await world.client.delete(PODS, "first", namespace=NS)
    return node


async def test_a_later_pod_of_the_claim_goes_to_the_volumes_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=3)) as world:
        node = await _first_consumer_gone(world)
        for i in range(3):
            await world.create(PODS, user(f"again-{i}", "data"))
        for i in range(3):
            again = await _until(world, PODS, f"again-{i}", lambda p: p["spec"].get("nodeName"))
            assert again["spec"]["nodeName"] == node


async def test_volume_node_affinity_conflict_keeps_the_pod_pending(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        node = await _first_consumer_gone(world)
        other = "kubeloop-node-2" if node == "kubeloop-node-1" else "kubeloop-node-1"
        await world.create(PODS, user("elsewhere", "data", nodeSelector={HOSTNAME: other}))
        stuck = await _until(world, PODS, "elsewhere", lambda p: condition(p, "PodScheduled").get("message"))
        assert condition(stuck, "PodScheduled")["message"] == (
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had volume "
            "node affinity conflict. preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
            "scheduling.")


async def test_static_local_volumes_are_pre_bound_by_the_scheduler_on_the_chosen_node(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(STORAGE_CLASSES, delayed_class("local-static", "kubernetes.io/no-provisioner"))
        await world.create(PVS, node_volume("on-2", "kubeloop-node-2"))
        await world.create(PVCS, claim("data", "local-static"))

        async def available() -> bool:
            return _phase(await world.get(PVS, "on-2", None)) == "Available"

        await world.eventually(available)
        await world.settle(40)
        # Delayed binding: the volume controller leaves the matching volume to the scheduler.
        assert _phase(await world.get(PVCS, "data")) == "Pending"
        await world.create(PODS, user("web", "data"))
        web = await _until(world, PODS, "web", lambda p: p["spec"].get("nodeName"))
        assert web["spec"]["nodeName"] == "kubeloop-node-2"
        bound = await _until(world, PVCS, "data", lambda c: _phase(c) == "Bound")
        assert bound["spec"]["volumeName"] == "on-2"
        assert SELECTED not in (bound["metadata"].get("annotations") or {})
        pv = await world.get(PVS, "on-2", None)
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"

        # No provisioner and no volume left: the next claim's pod cannot be placed anywhere.
        await world.create(PVCS, claim("more", "local-static"))
        await world.create(PODS, user("more", "more"))
        stuck = await _until(world, PODS, "more", lambda p: condition(p, "PodScheduled").get("message"))
        assert condition(stuck, "PodScheduled")["message"].startswith(
            "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")
        # A matching volume appears on node 1: the pod goes there.
        await world.create(PVS, node_volume("on-1", "kubeloop-node-1"))
        more = await _until(world, PODS, "more", lambda p: p["spec"].get("nodeName"))
        assert more["spec"]["nodeName"] == "kubeloop-node-1"
        assert (await _until(world, PVCS, "more", lambda c: _phase(c) == "Bound"))["spec"]["volumeName"] == "on-1"


async def test_pod_is_held_on_its_node_until_its_claims_are_bound_then_given_up_after_the_bind_timeout(
        tmp_path: Path) -> None:  # fmt: skip
    # A provisioner nobody runs: the claim gets its selected node but no volume ever comes.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(STORAGE_CLASSES, delayed_class("external", "example.com/nobody"))
        await world.create(PVCS, claim("data", "external"))
        await world.create(PODS, user("web", "data"))
        selected = await _until(world, PVCS, "data", lambda c: (c["metadata"].get("annotations") or {}).get(SELECTED))
        assert selected["metadata"]["annotations"][SELECTED] == "kubeloop-node-1"
        await world.advance(599)
        assert not (await world.get(PODS, "web"))["spec"].get("nodeName")
        # Give up after bindTimeoutSeconds; the claim keeps its selected node, so the pod is tried there again.
        await world.advance(1)
        failed = await _until(world, PODS, "web", lambda p: condition(p, "PodScheduled").get("reason") == "SchedulerError")
        assert condition(failed, "PodScheduled")["message"] == (
            'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded')
        assert not failed["spec"].get("nodeName")
        await world.advance(1)  # retried after the pod backoff; still waiting for the volume
        # The external provisioner finally delivers: a volume pre-bound to the claim.
        pvc = await world.get(PVCS, "data")
        volume = node_volume("late", "kubeloop-node-1", class_name="external")
        volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": NS,
                                      "name": "data", "uid": pvc["metadata"]["uid"]}
        await world.create(PVS, volume)
        await _until(world, PVCS, "data", lambda c: _phase(c) == "Bound")
        web = await _until(world, PODS, "web", lambda p: p["spec"].get("nodeName"))
        assert web["spec"]["nodeName"] == "kubeloop-node-1"


async def test_two_claims_of_one_pod_never_share_a_volume(tmp_path: Path) -> None:
    # FindPodVolumes: a volume matched to one claim of the pod is taken for the others on that node.
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(STORAGE_CLASSES, delayed_class("local-static", "kubernetes.io/no-provisioner"))
        await world.create(PVS, node_volume("big", "kubeloop-node-2", size="10Gi"))
        for name in ("a", "b"):
            await world.create(PVCS, claim(name, "local-static"))
        await world.create(PODS, user("web", "a", "b"))
        stuck = await _until(world, PODS, "web", lambda p: condition(p, "PodScheduled").get("message"))
        assert condition(stuck, "PodScheduled")["message"].startswith(
            "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")
        # Nothing was pre-bound for a node that cannot hold both claims.
        await world.settle()
        assert not (await world.get(PVS, "big", None))["spec"].get("claimRef")
        # A second volume on node 2, the smaller one: each claim gets one of the two.
        await world.create(PVS, node_volume("small", "kubeloop-node-2", size="2Gi"))
        web = await _until(world, PODS, "web", lambda p: p["spec"].get("nodeName"))
        assert web["spec"]["nodeName"] == "kubeloop-node-2"
        volumes = {(await _until(world, PVCS, name, lambda c: _phase(c) == "Bound"))["spec"]["volumeName"]
                   for name in ("a", "b")}
        assert volumes == {"big", "small"}
