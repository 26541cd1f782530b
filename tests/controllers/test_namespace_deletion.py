"""Namespace deletion: Terminating, content removal (pods first), conditions, finalize (controllers ref. 2)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeloop.api import Forbidden, MethodNotAllowed, ResourceInfo
from kubeloop.client import Client
from kubeloop.controllers import NamespaceController
from kubeloop.testing import InProcessCluster, eventually

from .conftest import CONFIGMAPS, NAMESPACES, PODS, SECRETS

HOLD = "example.com/x"
POD_SPEC = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def start_namespace_controller(cluster: InProcessCluster) -> NamespaceController:
    controller = NamespaceController(cluster.client, clock=cluster.clock, workers=2)
    cluster.run_in_background(controller.run())

    async def synced() -> bool:
        return controller.has_synced()

    await eventually(synced, clock=cluster.clock)
    return controller


def conditions(ns: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or []}


async def test_deleting_a_namespace_removes_its_content_then_the_namespace(cluster: InProcessCluster) -> None:
    await start_namespace_controller(cluster)
    await cluster.create(CONFIGMAPS, "cm")
    await cluster.create(SECRETS, "s")
    await cluster.create(PODS, "p", **POD_SPEC)

    await cluster.client.delete(NAMESPACES, "ns")
    terminating = await cluster.client.get(NAMESPACES, "ns")
    assert terminating["status"]["phase"] == "Terminating"
    assert terminating["spec"]["finalizers"] == ["kubernetes"]
    assert await cluster.exists(CONFIGMAPS, "cm")  # content is still listed while Terminating

    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)
    for resource, name in ((CONFIGMAPS, "cm"), (SECRETS, "s"), (PODS, "p")):
        assert await cluster.gone(resource, name)


async def test_new_content_in_a_terminating_namespace_is_refused(cluster: InProcessCluster) -> None:
    await cluster.create(CONFIGMAPS, "held", finalizers=[HOLD])
    await cluster.client.delete(NAMESPACES, "ns")

    with pytest.raises(Forbidden) as refused:
        await cluster.create(CONFIGMAPS, "late")
    assert refused.value.message == (
        'configmaps "late" is forbidden: unable to create new content in namespace ns because it is being terminated'
    )


async def test_a_finalizer_on_content_keeps_the_namespace_terminating_and_says_which(cluster: InProcessCluster) -> None:
    await start_namespace_controller(cluster)
    await cluster.create(CONFIGMAPS, "held", finalizers=[HOLD])
    await cluster.create(SECRETS, "free")

    await cluster.client.delete(NAMESPACES, "ns")

    async def conditions_written() -> dict[str, dict[str, Any]] | None:
        ns = await cluster.client.get(NAMESPACES, "ns")
        found = conditions(ns)
        return found if found.get("NamespaceFinalizersRemaining", {}).get("status") == "True" else None

    found = await eventually(conditions_written, clock=cluster.clock)
    assert found["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert found["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps. has 1 resource instances"
    )
    assert found["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
    assert found["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances"
    )
    ok = {t: (c["status"], c["reason"]) for t, c in found.items()}
    assert ok["NamespaceDeletionDiscoveryFailure"] == ("False", "ResourcesDiscovered")
    assert ok["NamespaceDeletionGroupVersionParsingFailure"] == ("False", "ParsedGroupVersions")
    assert ok["NamespaceDeletionContentFailure"] == ("False", "ContentDeleted")
    assert await cluster.gone(SECRETS, "free")
    held = await cluster.client.get(CONFIGMAPS, "held", namespace="ns")
    assert held["metadata"]["deletionTimestamp"]

    # Much later it is still Terminating: the finalizer is never skipped.
    await cluster.clock.advance(120)
    for _ in range(20):
        await cluster.clock.advance(1)
    ns = await cluster.client.get(NAMESPACES, "ns")
    assert ns["status"]["phase"] == "Terminating"

    await cluster.client.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, namespace="ns")
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)


async def test_pods_are_deleted_before_any_other_content(cluster: InProcessCluster) -> None:
    await start_namespace_controller(cluster)
    await cluster.create(PODS, "p", finalizers=[HOLD], **POD_SPEC)
    await cluster.create(CONFIGMAPS, "cm")

    await cluster.client.delete(NAMESPACES, "ns")

    async def pod_reported() -> bool:
        ns = await cluster.client.get(NAMESPACES, "ns")
        remaining = conditions(ns).get("NamespaceContentRemaining", {})
        return remaining.get("message") == "Some resources are remaining: pods. has 1 resource instances"

    await eventually(pod_reported, clock=cluster.clock)
    assert await cluster.exists(CONFIGMAPS, "cm"), "other content was deleted while a pod remained"

    await cluster.client.patch(PODS, "p", {"metadata": {"finalizers": None}}, namespace="ns")
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)
    assert await cluster.gone(CONFIGMAPS, "cm")


async def test_finalize_by_hand_removes_the_namespace_and_leaves_content_in_storage(cluster: InProcessCluster) -> None:
    await cluster.create(CONFIGMAPS, "left")
    await cluster.client.delete(NAMESPACES, "ns")
    ns = await cluster.client.get(NAMESPACES, "ns")
    ns["spec"]["finalizers"] = []

    await cluster.client.update(NAMESPACES, ns, subresource="finalize")

    assert await cluster.get_or_none(NAMESPACES, "ns") is None
    assert await cluster.exists(CONFIGMAPS, "left")


class RecordingClient(Client):
    """Records which resources got a DELETECOLLECTION and which objects a single DELETE."""

    collections: list[str]
    singles: list[str]
    refuse_collection_of: str = ""

    async def delete_collection(self, resource: ResourceInfo, **kwargs: Any) -> dict[str, Any]:
        self.collections.append(resource.plural)
        if resource.plural == self.refuse_collection_of:
            raise MethodNotAllowed(f"deletecollection is not supported on {resource.plural}")
        return await super().delete_collection(resource, **kwargs)

    async def delete(self, resource: ResourceInfo, name: str, **kwargs: Any) -> dict[str, Any]:
        self.singles.append(f"{resource.plural}/{name}")
        return await super().delete(resource, name, **kwargs)


async def start_recording_controller(cluster: InProcessCluster, *, refuse: str = "") -> RecordingClient:
    client: RecordingClient = cluster.new_client(RecordingClient)
    client.collections, client.singles, client.refuse_collection_of = [], [], refuse
    controller = NamespaceController(client, clock=cluster.clock, workers=2)
    cluster.run_in_background(controller.run())

    async def synced() -> bool:
        return controller.has_synced()

    await eventually(synced, clock=cluster.clock)
    return client


async def test_content_goes_with_one_deletecollection_per_resource(cluster: InProcessCluster) -> None:
    # namespaced_resources_deleter.go deleteCollection: one call per resource, not one per object.
    client = await start_recording_controller(cluster)
    for i in range(5):
        await cluster.create(CONFIGMAPS, f"cm-{i}")
    await cluster.create(SECRETS, "s")

    await cluster.client.delete(NAMESPACES, "ns")
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)

    assert client.collections.count("configmaps") == 1 and client.collections.count("secrets") == 1
    assert client.singles == []


async def test_a_resource_refusing_deletecollection_is_emptied_object_by_object(cluster: InProcessCluster) -> None:
    # IsMethodNotSupported from DeleteCollection -> listCollection + deleteEachItem.
    client = await start_recording_controller(cluster, refuse="configmaps")
    for i in range(3):
        await cluster.create(CONFIGMAPS, f"cm-{i}")

    await cluster.client.delete(NAMESPACES, "ns")
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), clock=cluster.clock)

    assert sorted(client.singles) == ["configmaps/cm-0", "configmaps/cm-1", "configmaps/cm-2"]
    for i in range(3):
        assert await cluster.gone(CONFIGMAPS, f"cm-{i}")


async def test_a_deleted_namespace_waits_upstreams_grace_period_before_it_is_emptied(
    cluster: InProcessCluster,
) -> None:
    """namespace_controller.go namespaceDeletionGracePeriod: 5 s before the first pass."""
    controller = await start_namespace_controller(cluster)
    assert controller.deletion_grace_period == 5.0
    await cluster.create(CONFIGMAPS, "cm")
    await cluster.client.delete(NAMESPACES, "ns")

    async def deletion_seen() -> bool:  # the controller queued the namespace (at the clock's current time)
        ns = controller.informer.cache.get("ns")
        return bool(ns and ns["metadata"].get("deletionTimestamp"))

    await eventually(deletion_seen, interval=0.005)
    await cluster.clock.advance(4.9)
    for _ in range(50):
        await asyncio.sleep(0.002)  # the controller runs; the fake clock does not move
    assert await cluster.exists(CONFIGMAPS, "cm")
    await cluster.clock.advance(0.2)
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), interval=0.005)


async def test_with_no_grace_period_a_deleted_namespace_is_emptied_without_waiting(
    cluster: InProcessCluster,
) -> None:
    """Safe against kubeloop's own server, which guards creates by the namespace's revision."""
    controller = NamespaceController(cluster.client, clock=cluster.clock, workers=2, deletion_grace_period=0)
    cluster.run_in_background(controller.run())
    await eventually(lambda: _synced(controller), interval=0.005)
    await cluster.create(CONFIGMAPS, "cm")
    await cluster.client.delete(NAMESPACES, "ns")
    # The fake clock never moves here: with the upstream 5 s wait this would never finish.
    await eventually(lambda: cluster.gone(NAMESPACES, "ns", None), interval=0.005)
    assert await cluster.gone(CONFIGMAPS, "cm")


async def _synced(controller: NamespaceController) -> bool:
    return controller.has_synced()
