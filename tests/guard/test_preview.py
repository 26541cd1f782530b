"""The preview predicts exactly what the garbage collector then removes (controllers reference §1, §4)."""

from __future__ import annotations

from typing import Any

from kubeloop.guard import Impact, preview_delete

from .conftest import (
    CLUSTERROLES,
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    PODS,
    PVCS,
    PVS,
    REPLICASETS,
    STATEFULSETS,
    Cluster,
    owner_ref,
)


def names(entries: Any) -> set[str]:
    return {e.ref.display for e in entries}


async def delete_and_settle(cluster: Cluster, resource: Any, name: str, cascade: str, impact: Impact) -> set[str]:
    """Delete for real with the GC running; return the uids that disappeared once it is idle again.

    Waits (bounded in polls) for the predicted objects to go, then for the GC to be idle, so an
    object the GC removes beyond the prediction shows up in the result too.
    """
    before = await cluster.uids()
    gc = await cluster.start_gc()
    await cluster.client.delete(resource, name, propagation_policy=cascade.capitalize())

    async def predicted_gone() -> bool:
        return not (await cluster.uids()) & impact.deleted_uids

    async def idle() -> bool:
        return bool(gc.idle())

    await cluster.eventually(predicted_gone, tries=3000)
    for _ in range(3):
        await cluster.eventually(idle, tries=3000)
    return before - await cluster.uids()


async def test_deployment_preview_is_the_chain_the_gc_removes(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    await cluster.make(CONFIGMAPS, "unrelated")
    impact = await preview_delete(cluster.client, "deploy", "web", namespace="prod")
    assert names(impact.deleted) == {"deployment.apps/web", "replicaset.apps/web-1", "pod/web-1-0", "pod/web-1-1",
                                     "pod/web-1-2"}
    assert impact.deleted[0].ref.display == "deployment.apps/web"
    tree = {e.ref.name: e.parent for e in impact.deleted}
    uid = {e.ref.name: e.ref.uid for e in impact.deleted}
    assert tree["web-1-0"] == uid["web-1"] and tree["web-1"] == uid["web"]
    removed = await delete_and_settle(cluster, DEPLOYMENTS, "web", "background", impact)
    assert removed == impact.deleted_uids


async def test_orphan_cascade_previews_orphans_and_the_gc_keeps_them(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    impact = await preview_delete(cluster.client, "deployments.apps", "web", cascade="orphan")
    assert names(impact.deleted) == {"deployment.apps/web"}
    assert names(impact.orphaned) == {"replicaset.apps/web-1"}
    removed = await delete_and_settle(cluster, DEPLOYMENTS, "web", "orphan", impact)
    assert removed == impact.deleted_uids
    rs = await cluster.get_or_none(REPLICASETS, "web-1")
    assert not rs["metadata"].get("ownerReferences")


async def test_foreground_preview_names_blocking_dependents_and_matches_the_gc(cluster: Cluster) -> None:
    dep = await cluster.make(DEPLOYMENTS, "web")
    await cluster.make(REPLICASETS, "blocking", owners=[owner_ref(dep, block=True)])
    await cluster.make(REPLICASETS, "free", owners=[owner_ref(dep, block=False, controller=False)])
    impact = await preview_delete(cluster.client, "deployment", "web", cascade="foreground")
    blocking = {e.ref.name for e in impact.deleted if e.blocking}
    assert blocking == {"blocking"}
    assert any(n.finalizer == "foregroundDeletion" and "1 blocking" in n.effect for n in impact.finalizers)
    removed = await delete_and_settle(cluster, DEPLOYMENTS, "web", "foreground", impact)
    assert removed == impact.deleted_uids


async def test_multi_owner_dependent_survives_while_another_owner_remains(cluster: Cluster) -> None:
    a = await cluster.make(CONFIGMAPS, "owner-a")
    b = await cluster.make(CONFIGMAPS, "owner-b")
    await cluster.make(CONFIGMAPS, "shared", owners=[owner_ref(a, controller=False), owner_ref(b, controller=False)])
    await cluster.make(CONFIGMAPS, "only-a", owners=[owner_ref(a)])
    impact = await preview_delete(cluster.client, "cm", "owner-a")
    assert names(impact.deleted) == {"configmap/owner-a", "configmap/only-a"}
    assert [(s.ref.name, s.kept_by) for s in impact.surviving] == [("shared", ("configmap/owner-b",))]
    removed = await delete_and_settle(cluster, CONFIGMAPS, "owner-a", "background", impact)
    assert removed == impact.deleted_uids
    shared = await cluster.get_or_none(CONFIGMAPS, "shared")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["owner-b"]


async def test_chains_through_several_owners_resolve_in_any_order(cluster: Cluster) -> None:
    a = await cluster.make(CONFIGMAPS, "a")
    b = await cluster.make(CONFIGMAPS, "b", owners=[owner_ref(a)])
    await cluster.make(CONFIGMAPS, "c", owners=[owner_ref(a, controller=False), owner_ref(b, controller=False)])
    impact = await preview_delete(cluster.client, "configmaps", "a")
    assert names(impact.deleted) == {"configmap/a", "configmap/b", "configmap/c"}
    assert not impact.surviving


async def test_owner_in_another_namespace_counts_as_absent(cluster: Cluster) -> None:
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "other"}})
    foreign = await cluster.make(CONFIGMAPS, "foreign", namespace="other")
    owner = await cluster.make(CONFIGMAPS, "owner")
    await cluster.make(CONFIGMAPS, "dep", owners=[owner_ref(owner, controller=False),
                                                  owner_ref(foreign, controller=False)])
    impact = await preview_delete(cluster.client, "configmap", "owner")
    assert "configmap/dep" in names(impact.deleted)


async def test_namespaced_dependent_of_a_live_cluster_scoped_owner_survives(cluster: Cluster) -> None:
    role = await cluster.make(CLUSTERROLES, "keeper", namespace=None)
    owner = await cluster.make(CONFIGMAPS, "owner")
    await cluster.make(CONFIGMAPS, "dep", owners=[owner_ref(owner, controller=False), owner_ref(role, controller=False)])
    impact = await preview_delete(cluster.client, "configmap", "owner")
    assert [s.ref.name for s in impact.surviving] == ["dep"]
    assert names(impact.deleted) == {"configmap/owner"}


async def test_custom_finalizers_are_reported_as_blocking(cluster: Cluster) -> None:
    dep = await cluster.make(DEPLOYMENTS, "web", finalizers=["example.com/cleanup"])
    await cluster.make(PODS, "p", owners=[owner_ref(dep)], finalizers=["kubernetes.io/pvc-protection"])
    impact = await preview_delete(cluster.client, "deploy", "web")
    notes = {(n.ref.name, n.finalizer): n.blocks for n in impact.finalizers}
    assert notes == {("web", "example.com/cleanup"): True, ("p", "kubernetes.io/pvc-protection"): False}


def claim(name: str, volume: str = "", owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}
    if volume:
        body["spec"]["volumeName"] = volume
    return body


async def make_statefulset(cluster: Cluster, when_deleted: str) -> dict[str, Any]:
    spec = {"serviceName": "db", "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "10Gi"}}}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted, "whenScaled": "Retain"}}
    sts = await cluster.make(STATEFULSETS, "db", spec=spec)
    for i, policy in ((0, "Delete"), (1, "Retain")):
        await cluster.make(PVS, f"pv-{i}", namespace=None, spec={
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": f"/d{i}"},
            "persistentVolumeReclaimPolicy": policy})
        await cluster.make(PODS, f"db-{i}", owners=[owner_ref(sts)])
        owners = [owner_ref(sts)] if when_deleted == "Delete" else None
        await cluster.make(PVCS, f"data-db-{i}", owners=owners, **claim(f"data-db-{i}", f"pv-{i}"))
    return sts


async def test_statefulset_with_delete_policy_puts_claims_and_delete_volumes_at_risk(cluster: Cluster) -> None:
    await make_statefulset(cluster, "Delete")
    impact = await preview_delete(cluster.client, "sts", "db")
    assert {"persistentvolumeclaim/data-db-0", "persistentvolumeclaim/data-db-1"} <= names(impact.deleted)
    fates = {d.ref.name: (d.fate, d.capacity) for d in impact.data}
    assert fates == {"data-db-0": ("deleted", "10Gi"), "data-db-1": ("deleted", "10Gi"),
                     "pv-0": ("deleted", "10Gi"), "pv-1": ("released", "10Gi")}
    removed = await delete_and_settle(cluster, STATEFULSETS, "db", "background", impact)
    assert removed == impact.deleted_uids


async def test_statefulset_orphan_cascade_keeps_pods_and_claims(cluster: Cluster) -> None:
    await make_statefulset(cluster, "Delete")
    impact = await preview_delete(cluster.client, "statefulsets", "db", cascade="orphan")
    assert names(impact.deleted) == {"statefulset.apps/db"}
    assert names(impact.orphaned) == {"pod/db-0", "pod/db-1", "persistentvolumeclaim/data-db-0",
                                      "persistentvolumeclaim/data-db-1"}
    assert {d.ref.name: d.fate for d in impact.data} == {"data-db-0": "kept", "data-db-1": "kept"}
    removed = await delete_and_settle(cluster, STATEFULSETS, "db", "orphan", impact)
    assert removed == impact.deleted_uids
    for name in ("data-db-0", "data-db-1"):
        assert not (await cluster.get_or_none(PVCS, name))["metadata"].get("ownerReferences")


async def test_statefulset_retain_policy_keeps_claims_and_says_why(cluster: Cluster) -> None:
    await make_statefulset(cluster, "Retain")
    impact = await preview_delete(cluster.client, "sts", "db")
    assert names(impact.deleted) == {"statefulset.apps/db", "pod/db-0", "pod/db-1"}
    kept = {d.ref.name: d.detail for d in impact.data}
    assert set(kept) == {"data-db-0", "data-db-1"}
    assert all("whenDeleted=Retain" in why for why in kept.values())


async def test_namespace_preview_lists_all_content_and_cluster_scoped_dependents(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    await cluster.make(CONFIGMAPS, "settings")
    ns = await cluster.client.get(NAMESPACES, "prod")
    ns.setdefault("apiVersion", "v1")
    ns.setdefault("kind", "Namespace")
    await cluster.make(CLUSTERROLES, "prod-reader", namespace=None, owners=[owner_ref(ns, controller=False)])
    impact = await preview_delete(cluster.client, "ns", "prod")
    assert names(impact.deleted) == {"namespace/prod", "deployment.apps/web", "replicaset.apps/web-1", "pod/web-1-0",
                                     "pod/web-1-1", "pod/web-1-2", "configmap/settings",
                                     "clusterrole.rbac.authorization.k8s.io/prod-reader"}
    parents = {e.ref.name: e.parent for e in impact.deleted}
    uid = {e.ref.name: e.ref.uid for e in impact.deleted}
    assert parents["settings"] == uid["prod"] and parents["web-1"] == uid["web"]


async def test_pods_on_nodes_warn_that_their_grace_period_delays_the_delete(cluster: Cluster) -> None:
    # Pod strategy CheckGracefulDelete: a scheduled, running pod stays Terminating for its
    # terminationGracePeriodSeconds (default 30); unscheduled or finished pods go at once.
    dep = await cluster.make(DEPLOYMENTS, "web")
    rs = await cluster.make(REPLICASETS, "web-1", owners=[owner_ref(dep)])
    spec = {"containers": [{"name": "c", "image": "nginx"}]}
    await cluster.make(PODS, "slow", owners=[owner_ref(rs)], spec={**spec, "nodeName": "n1",
                                                                   "terminationGracePeriodSeconds": 45})
    await cluster.make(PODS, "default", owners=[owner_ref(rs)], spec={**spec, "nodeName": "n1"})
    await cluster.make(PODS, "unscheduled", owners=[owner_ref(rs)], spec=spec)
    await cluster.make(PODS, "quick", owners=[owner_ref(rs)], spec={**spec, "nodeName": "n1",
                                                                    "terminationGracePeriodSeconds": 0})

    impact = await preview_delete(cluster.client, "deploy", "web", namespace="prod")

    graceful = [w for w in impact.warnings if "terminate gracefully" in w]
    assert len(graceful) == 1 and graceful[0].startswith("2 pod(s)") and "up to 45 s" in graceful[0]


async def test_no_grace_period_warning_without_graceful_pods(cluster: Cluster) -> None:
    await cluster.deployment_chain()
    impact = await preview_delete(cluster.client, "deploy", "web", namespace="prod")
    assert not [w for w in impact.warnings if "terminate gracefully" in w]
