"""The in-process cluster is the real server and client: CAS, watch and controllers on a fake clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeloop.api import Conflict, NotFound
from kubeloop.client import Client
from kubeloop.testing import FakeClock, InProcessCluster, eventually, owner_ref, resource

CONFIGMAPS = resource("", "ConfigMap")
SECRETS = resource("", "Secret")
CLUSTERROLES = resource("rbac.authorization.k8s.io", "ClusterRole")


async def test_writes_go_through_the_real_store_with_resource_versions(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, namespaces=["team"]) as cluster:
        created = await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "1"}},
                                              namespace="team")
        stale = dict(created, data={"k": "2"})
        await cluster.client.update(CONFIGMAPS, dict(created, data={"k": "3"}), namespace="team")
        with pytest.raises(Conflict):
            await cluster.client.update(CONFIGMAPS, stale, namespace="team")
        assert cluster.store.revision >= int(created["metadata"]["resourceVersion"]) + 1


async def test_state_outlives_the_cluster_object_on_the_same_directory(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path) as cluster:
        await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "kept"}})
    async with InProcessCluster(tmp_path) as cluster:
        assert (await cluster.client.get(CONFIGMAPS, "kept"))["metadata"]["name"] == "kept"
        with pytest.raises(NotFound):
            await cluster.client.get(CONFIGMAPS, "never")


async def test_background_tasks_and_extra_clients_are_cleaned_up(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path) as cluster:
        other = cluster.new_client(Client)
        seen: list[str] = []

        async def watcher() -> None:
            async for event in other.watch(CONFIGMAPS, resource_version="0"):
                seen.append(event.object["metadata"]["name"])

        task = cluster.run_in_background(watcher())
        await cluster.client.create(CONFIGMAPS, {"metadata": {"name": "w"}})
        await cluster.eventually(lambda: _const("w" in seen))
    assert task.cancelled() or task.done()


async def test_eventually_advances_the_fake_clock_between_polls() -> None:
    clock = FakeClock()
    woke: list[float] = []

    async def sleeper() -> None:
        await clock.sleep(10)
        woke.append(clock.now())

    task = asyncio.create_task(sleeper())
    await eventually(lambda: _const(bool(woke)), clock=clock, step=1.0)
    await task
    assert woke and clock.monotonic() >= 10


async def test_eventually_reports_the_last_failed_assertion() -> None:
    async def never() -> bool:
        raise AssertionError("still waiting for x")

    with pytest.raises(AssertionError, match="still waiting for x"):
        await eventually(never, tries=5)


async def test_create_builds_objects_by_name_in_the_default_namespace_with_owners(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, namespaces=["team"], default_namespace="team") as cluster:
        owner = await cluster.create(CONFIGMAPS, "owner", labels={"app": "web"}, data={"k": "v"})
        assert (owner["apiVersion"], owner["kind"], owner["metadata"]["namespace"]) == ("v1", "ConfigMap", "team")
        child = await cluster.create(SECRETS, "child", owners=[owner_ref(owner, controller=True, block=True)],
                                     finalizers=["example.com/hold"], annotations={"a": "b"})
        assert child["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert child["metadata"]["finalizers"] == ["example.com/hold"]
        assert (await cluster.client.get(CONFIGMAPS, "owner", namespace="team"))["data"] == {"k": "v"}
        role = await cluster.create(CLUSTERROLES, "reader", namespace="ignored-for-cluster-scoped")
        assert "namespace" not in role["metadata"]
        assert await cluster.exists(CLUSTERROLES, "reader") and await cluster.exists(SECRETS, "child")
        assert await cluster.gone(SECRETS, "child", "default")
        assert await cluster.get_or_none(CONFIGMAPS, "never") is None


def test_owner_ref_names_the_owner_and_sets_only_the_flags_asked_for() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "uid": "u"}}
    assert owner_ref(owner) == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u"}
    assert owner_ref(owner, block=True)["blockOwnerDeletion"] is True
    assert "controller" not in owner_ref(owner, block=True)


async def test_eventually_can_sleep_between_polls_for_work_off_the_loop() -> None:
    polls = 0

    async def third() -> bool:
        nonlocal polls
        polls += 1
        return polls >= 3

    assert await eventually(third, interval=0.001, tries=3)


async def _const(value: bool) -> bool:
    return value
