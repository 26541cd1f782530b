"""Plan ids are stable hashes of the impact; --confirm executes only an unchanged plan; kind names resolve."""

from __future__ import annotations

import asyncio

import pytest

from kubeloop.api import NotFound
from kubeloop.client import discover_resources
from kubeloop.guard import (
    DataAtRisk,
    Entry,
    Impact,
    ObjectRef,
    PlanChanged,
    PlanStore,
    Survivor,
    confirm_delete,
    diff_impacts,
    preview_delete,
    resolve_resource,
    wait_for_impact,
)

from .conftest import CONFIGMAPS, DEPLOYMENTS, PODS, REPLICASETS, Cluster, owner_ref


async def test_plan_id_is_stable_and_changes_with_the_impact(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    first = await preview_delete(cluster.client, "deploy", "web")
    again = await preview_delete(cluster.client, "deploy", "web")
    assert first.plan_id == again.plan_id and len(first.plan_id) == 16
    await cluster.make(CONFIGMAPS, "unrelated")
    assert (await preview_delete(cluster.client, "deploy", "web")).plan_id == first.plan_id
    assert (await preview_delete(cluster.client, "deploy", "web", cascade="foreground")).plan_id != first.plan_id
    await cluster.client.patch(PODS, "web-1-0", {"metadata": {"labels": {"touched": "yes"}}})
    assert (await preview_delete(cluster.client, "deploy", "web")).plan_id != first.plan_id


async def test_confirm_refuses_a_changed_plan_and_says_what_was_added(cluster: Cluster, tmp_path: object) -> None:
    await cluster.deployment_chain()
    reviewed = await preview_delete(cluster.client, "deploy", "web")
    rs = await cluster.get_or_none(REPLICASETS, "web-1")
    await cluster.make(PODS, "web-1-new", owners=[owner_ref(rs)])
    with pytest.raises(PlanChanged) as caught:
        await confirm_delete(cluster.client, "deploy", "web", plan=reviewed.plan_id, reviewed=reviewed)
    assert caught.value.status_code == 409
    assert caught.value.diff is not None
    assert caught.value.diff.lines() == ["+ deleted: pod/web-1-new -n prod (added)"]
    assert await cluster.get_or_none(DEPLOYMENTS, "web") is not None, "a refused plan deletes nothing"


async def test_confirm_executes_an_unchanged_plan_with_preconditions_and_waits(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    impact = await preview_delete(cluster.client, "deploy", "web")
    await cluster.start_gc()
    outcome = await confirm_delete(cluster.client, "deploy", "web", plan=impact.plan_id)
    assert outcome.impact.plan_id == impact.plan_id and outcome.approved == ()
    seen: list[tuple[int, int]] = []
    waiting = asyncio.create_task(wait_for_impact(cluster.client, impact, clock=cluster.clock, timeout=600,
                                                  progress=lambda d, t: seen.append((d, t))))

    async def done() -> bool:
        return waiting.done()

    await cluster.eventually(done, tries=3000)
    await waiting
    assert seen[-1] == (5, 5)
    assert await cluster.get_or_none(PODS, "web-1-0") is None


async def test_saved_plans_round_trip(cluster: Cluster, tmp_path: object) -> None:
    from pathlib import Path

    await cluster.deployment_chain()
    impact = await preview_delete(cluster.client, "deploy", "web")
    store = PlanStore(Path(str(tmp_path)) / "plans")
    store.save(impact)
    assert store.load(impact.plan_id) == impact
    assert store.load("0000000000000000") is None


async def test_a_saved_plan_is_flushed_before_its_rename_and_its_directory_after(
        cluster: Cluster, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan id printed to the user must survive a crash until ``--confirm`` (kubeloop._files.write_atomically).
    import os
    from pathlib import Path

    from kubeloop import _files

    await cluster.deployment_chain()
    impact = await preview_delete(cluster.client, "deploy", "web")
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", recording_fsync)
    plans = Path(str(tmp_path)) / "cache" / "plans"
    saved = PlanStore(plans).save(impact)
    monkeypatch.undo()
    assert saved == plans / f"{impact.plan_id}.json"
    temp = next(i for i, name in enumerate(synced) if Path(name).name.startswith(f".{impact.plan_id}.json."))
    assert str(plans) in synced[temp + 1:]  # the directory after the rename
    assert str(plans.parent) in synced[:temp]  # the new directories' entries, before
    assert [p.name for p in plans.iterdir()] == [f"{impact.plan_id}.json"]
    assert PlanStore(plans).load(impact.plan_id) == impact


@pytest.mark.parametrize(("name", "expected"), [
    ("deploy", ("apps", "deployments")), ("deployment", ("apps", "deployments")),
    ("Deployment", ("apps", "deployments")), ("deployments.apps", ("apps", "deployments")),
    ("deployment.v1.apps", ("apps", "deployments")), ("sts", ("apps", "statefulsets")),
    ("ns", ("", "namespaces")), ("po", ("", "pods")), ("pods.v1", ("", "pods")),
    ("pvc", ("", "persistentvolumeclaims")), ("events", ("", "events")),
])
async def test_kind_names_resolve_like_kubectl(cluster: Cluster, name: str, expected: tuple[str, str]) -> None:
    discovery = await discover_resources(cluster.client)
    info = resolve_resource(discovery.preferred, name)
    assert (info.group, info.plural) == expected


async def test_unknown_kind_is_not_found_with_kubectls_message(cluster: Cluster) -> None:
    discovery = await discover_resources(cluster.client)
    with pytest.raises(NotFound, match='the server doesn\'t have a resource type "gizmos"'):
        resolve_resource(discovery.preferred, "gizmos")


def test_diff_names_what_was_added_removed_and_modified_in_every_section() -> None:
    def ref(name: str, rv: str = "1") -> ObjectRef:
        return ObjectRef("", "v1", "Pod", "pods", "prod", name, f"uid-{name}", rv)

    old = Impact(ref("t"), "background", deleted=(Entry(ref("t")), Entry(ref("gone"))),
                 orphaned=(Entry(ref("o")),), surviving=(Survivor(ref("s"), (), ()),),
                 data=(DataAtRisk(ref("d"), "1Gi", "deleted", ""),))
    new = Impact(ref("t"), "background", deleted=(Entry(ref("t")), Entry(ref("new"))),
                 orphaned=(Entry(ref("o", "2")),), surviving=(),
                 data=(DataAtRisk(ref("d"), "1Gi", "deleted", ""), DataAtRisk(ref("e"), "1Gi", "released", "")))
    assert diff_impacts(old, new).lines() == [
        "+ deleted: pod/new -n prod (added)",
        "- deleted: pod/gone -n prod (removed)",
        "~ orphaned: pod/o -n prod (modified)",
        "- surviving: pod/s -n prod (removed)",
        "+ data: pod/e -n prod (added)",
    ]
    assert not diff_impacts(old, old)
