"""Namespace deletion: Terminating, content removal (pods first), conditions, finalize (controllers ref. 2)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api import Forbidden
from kubeloop.controllers import NamespaceController

from .conftest import CONFIGMAPS, NAMESPACES, PODS, SECRETS, Cluster, eventually, get_or_none

HOLD = "example.com/x"
POD_SPEC = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def start_namespace_controller(cluster: Cluster) -> NamespaceController:
    controller = NamespaceController(cluster.client, clock=cluster.clock, workers=2)
    cluster.run_in_background(controller.run())

    async def synced() -> bool:
        return controller.has_synced()

    await eventually(synced, clock=cluster.clock)
    return controller


def conditions(ns: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or []}


async def test_deleting_a_namespace_removes_its_content_then_the_namespace(cluster: Cluster) -> None:
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


async def test_new_content_in_a_terminating_namespace_is_refused(cluster: Cluster) -> None:
    await cluster.create(CONFIGMAPS, "held", finalizers=[HOLD])
    await cluster.client.delete(NAMESPACES, "ns")

    with pytest.raises(Forbidden) as refused:
        await cluster.create(CONFIGMAPS, "late")
    assert refused.value.message == (
        'configmaps "late" is forbidden: unable to create new content in namespace ns because it is being terminated'
    )


async def test_a_finalizer_on_content_keeps_the_namespace_terminating_and_says_which(cluster: Cluster) -> None:
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


async def test_pods_are_deleted_before_any_other_content(cluster: Cluster) -> None:
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


async def test_finalize_by_hand_removes_the_namespace_and_leaves_content_in_storage(cluster: Cluster) -> None:
    await cluster.create(CONFIGMAPS, "left")
    await cluster.client.delete(NAMESPACES, "ns")
    ns = await cluster.client.get(NAMESPACES, "ns")
    ns["spec"]["finalizers"] = []

    await cluster.client.update(NAMESPACES, ns, subresource="finalize")

    assert await get_or_none(cluster.client, NAMESPACES, "ns") is None
    assert await cluster.exists(CONFIGMAPS, "left")
