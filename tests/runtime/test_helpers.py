"""Helpers: controller references, finalizers, create-or-update/patch, status writer, conditions.

API-facing helpers run against the real API server (tests/runtime/_realapi.py) through a client that
records its writes.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import AlreadyExists, Conflict, KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.runtime import (
    AlreadyOwnedError,
    Cache,
    OperationResult,
    StatusWriter,
    add_finalizer,
    create_or_patch,
    create_or_update,
    remove_finalizer,
    set_condition,
    set_controller_reference,
    set_owner_reference,
)
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import FlakyClient, real_cluster

KINDS = KindRegistry()
CONFIGMAPS: ResourceInfo = KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
DEPLOYMENTS: ResourceInfo = KINDS.by_kind("apps", "Deployment")  # type: ignore[assignment]


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[FlakyClient]:
    async with real_cluster(tmp_path, FakeClock()) as open_client:
        yield open_client(FlakyClient)


def deployment(name: str = "web", replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def owner(
    name: str = "web", *, kind: str = "Deployment", api_version: str = "apps/v1", ns: str | None = "ns"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def child(ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": "web-abc", "namespace": ns}}


# -- ownership -------------------------------------------------------------------------------------


def test_set_controller_reference_sets_controller_and_block_owner_deletion() -> None:
    obj = child()
    assert set_controller_reference(owner(), obj)
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-web",
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert not set_controller_reference(owner(), obj)  # idempotent: nothing changed


def test_set_controller_reference_refuses_an_object_another_controller_owns() -> None:
    obj = child()
    set_controller_reference(owner("web"), obj)
    with pytest.raises(AlreadyOwnedError, match="already owned by another Deployment controller web"):
        set_controller_reference(owner("other"), obj)
    assert len(obj["metadata"]["ownerReferences"]) == 1


def test_set_controller_reference_refreshes_the_same_owner_across_versions() -> None:
    obj = child()
    set_controller_reference(owner(api_version="apps/v1beta2"), obj)
    assert set_controller_reference(owner(), obj)
    assert [r["apiVersion"] for r in obj["metadata"]["ownerReferences"]] == ["apps/v1"]


def test_owner_references_must_not_cross_namespaces_or_scopes() -> None:
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(owner(ns="other"), child())
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a namespace-scoped owner"):
        set_owner_reference(owner(), {"metadata": {"name": "pv-1"}})
    node = owner("node-1", kind="Node", api_version="v1", ns=None)
    assert set_controller_reference(node, child())  # a cluster-scoped owner is fine for anyone


def test_an_owner_that_was_never_read_from_the_api_is_refused() -> None:
    with pytest.raises(ValueError, match="uid"):
        set_controller_reference(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}, child()
        )


def test_set_owner_reference_adds_a_non_controller_owner_beside_the_controller() -> None:
    obj = child()
    set_controller_reference(owner("web"), obj)
    assert set_owner_reference(owner("extra", kind="ConfigMap", api_version="v1"), obj)
    refs = obj["metadata"]["ownerReferences"]
    assert [r.get("controller") for r in refs] == [True, None]


# -- finalizers ------------------------------------------------------------------------------------


def test_finalizers_are_added_once_and_removed_entirely() -> None:
    obj = child()
    assert add_finalizer(obj, "example.com/cleanup")
    assert not add_finalizer(obj, "example.com/cleanup")
    assert obj["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert remove_finalizer(obj, "example.com/cleanup")
    assert "finalizers" not in obj["metadata"]
    assert not remove_finalizer(obj, "example.com/cleanup")


def test_no_new_finalizer_on_an_object_being_deleted() -> None:
    obj = child()
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    with pytest.raises(ValueError, match="no new finalizers can be added if the object is being deleted"):
        add_finalizer(obj, "example.com/cleanup")


# -- create or update --------------------------------------------------------------------------------


def set_data(value: str) -> Any:
    def mutate(obj: dict[str, Any]) -> None:
        obj["data"] = {"key": value}

    return mutate


async def test_create_or_update_creates_then_updates_then_writes_nothing(client: FlakyClient) -> None:
    skeleton = {"metadata": {"name": "cfg", "namespace": "ns"}}
    obj, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("1"))
    assert result is OperationResult.CREATED and obj["data"] == {"key": "1"}
    obj, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("2"))
    assert result is OperationResult.UPDATED and obj["data"] == {"key": "2"}
    before = len(client.writes)
    again, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("2"))
    assert result is OperationResult.UNCHANGED and result == "unchanged"
    assert len(client.writes) == before  # nothing written when nothing changed
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_create_or_update_accepts_an_async_mutate(client: Client) -> None:
    async def mutate(obj: dict[str, Any]) -> None:
        obj["data"] = {"async": "yes"}

    obj, result = await create_or_update(
        client, CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}}, mutate
    )
    assert result is OperationResult.CREATED and obj["data"] == {"async": "yes"}


async def test_create_or_update_loses_a_race_with_a_conflict_not_a_silent_overwrite(client: Client) -> None:
    await client.create(CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}, "data": {"key": "0"}})

    async def racing(obj: dict[str, Any]) -> None:
        # someone else writes between our GET and our PUT
        await client.patch(CONFIGMAPS, "cfg", {"data": {"other": "x"}}, namespace="ns")
        obj["data"]["key"] = "mine"

    with pytest.raises(Conflict):
        await create_or_update(client, CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}}, racing)
    live = await client.get(CONFIGMAPS, "cfg", namespace="ns")
    assert live["data"] == {"key": "0", "other": "x"}


async def test_create_or_update_from_a_cache_reads_nothing_from_the_server_and_fails_safe_when_stale(
    client: FlakyClient,
) -> None:
    cache = Cache()
    skeleton = {"metadata": {"name": "cfg", "namespace": "ns"}}
    created, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("1"), cache=cache)
    assert result is OperationResult.CREATED
    # The cache has not seen the create yet: a second create is refused by the server, not duplicated.
    with pytest.raises(AlreadyExists):
        await create_or_update(client, CONFIGMAPS, skeleton, set_data("1"), cache=cache)
    cache.upsert(created)
    writes = len(client.writes)
    client.down = True  # no request is needed to find that nothing changed
    _, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("1"), cache=cache)
    client.down = False
    assert result is OperationResult.UNCHANGED and len(client.writes) == writes
    await client.patch(CONFIGMAPS, "cfg", {"data": {"key": "other"}}, namespace="ns")  # the cache lags
    with pytest.raises(Conflict):
        await create_or_update(client, CONFIGMAPS, skeleton, set_data("2"), cache=cache)
    cache.upsert(await client.get(CONFIGMAPS, "cfg", namespace="ns"))
    updated, result = await create_or_update(client, CONFIGMAPS, skeleton, set_data("2"), cache=cache)
    assert result is OperationResult.UPDATED and updated["data"] == {"key": "2"}


async def test_mutate_may_not_rename_the_object(client: Client) -> None:
    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="name or namespace"):
        await create_or_update(client, CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}}, rename)


async def test_create_or_patch_sends_only_the_changed_fields(client: FlakyClient) -> None:
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}, "data": {"a": "1", "b": "2"}}
    )

    def mutate(obj: dict[str, Any]) -> None:
        obj["data"]["b"] = "3"

    obj, result = await create_or_patch(
        client, CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}}, mutate
    )
    assert result is OperationResult.UPDATED
    assert obj["data"] == {"a": "1", "b": "3"}
    assert client.writes[-1][:2] == ("patch", {"data": {"b": "3"}})
    before = len(client.writes)
    _, result = await create_or_patch(
        client, CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "ns"}}, mutate
    )
    assert result is OperationResult.UNCHANGED
    assert len(client.writes) == before


async def test_create_or_patch_writes_status_through_the_status_subresource(client: FlakyClient) -> None:
    await client.create(DEPLOYMENTS, deployment())

    def status_only(obj: dict[str, Any]) -> None:
        obj["status"] = {"replicas": 1}

    def both(obj: dict[str, Any]) -> None:
        obj["spec"]["replicas"] = 2
        obj["status"] = {"replicas": 2}

    key = {"metadata": {"name": "web", "namespace": "ns"}}
    obj, result = await create_or_patch(client, DEPLOYMENTS, key, status_only)
    assert result is OperationResult.UPDATED_STATUS_ONLY and obj["status"] == {"replicas": 1}
    assert client.writes[-1][2].get("subresource") == "status"
    obj, result = await create_or_patch(client, DEPLOYMENTS, key, both)
    assert result is OperationResult.UPDATED_STATUS
    assert obj["spec"]["replicas"] == 2 and obj["status"] == {"replicas": 2}


# -- status ----------------------------------------------------------------------------------------


async def test_status_writer_stamps_observed_generation_and_skips_unchanged_writes(
    client: FlakyClient,
) -> None:
    live = await client.create(DEPLOYMENTS, deployment())
    live = await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, namespace="ns")
    assert live["metadata"]["generation"] == 2
    writer = StatusWriter(client)
    # readyReplicas may not exceed replicas (ValidateDeploymentStatus), so the status counts both.
    obj, result = await writer.write(DEPLOYMENTS, live, {"replicas": 1, "readyReplicas": 1})
    assert result is OperationResult.UPDATED
    assert obj["status"]["readyReplicas"] == 1 and obj["status"]["observedGeneration"] == 2
    assert client.writes[-1][0] == "update" and client.writes[-1][2].get("subresource") == "status"
    before = len(client.writes)
    obj, result = await writer.write(DEPLOYMENTS, obj, {"replicas": 1, "readyReplicas": 1})
    assert result is OperationResult.UNCHANGED
    assert len(client.writes) == before


async def test_status_writer_never_overwrites_a_newer_object_from_a_stale_copy(client: Client) -> None:
    stale = await client.create(DEPLOYMENTS, deployment())
    await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, namespace="ns")
    with pytest.raises(Conflict):
        await StatusWriter(client).write(DEPLOYMENTS, stale, {"replicas": 1})


async def test_set_condition_moves_last_transition_time_only_on_status_change() -> None:
    clock = FakeClock()
    conditions: list[dict[str, Any]] = []
    assert set_condition(conditions, type="Ready", status="False", reason="Starting", clock=clock)
    first = conditions[0]["lastTransitionTime"]
    await clock.advance(60)
    assert not set_condition(conditions, type="Ready", status="False", reason="Starting", clock=clock)
    assert set_condition(
        conditions, type="Ready", status="False", reason="Waiting", message="pods", clock=clock
    )
    assert conditions[0]["lastTransitionTime"] == first
    assert set_condition(
        conditions, type="Ready", status="True", reason="Available", observed_generation=2, clock=clock
    )
    assert conditions[0]["lastTransitionTime"] != first
    assert conditions[0]["observedGeneration"] == 2
    assert len(conditions) == 1
    with pytest.raises(ValueError):
        set_condition(conditions, type="Ready", status="yes", reason="X", clock=clock)
