"""Issue 5's seed scenarios with the real workload controllers, real kubectl and ``kubeloop delete``'s preview.

All against the session's ``kubeloop up`` (its controller manager runs the Deployment, ReplicaSet,
StatefulSet, volume and kubelet simulators next to the garbage collector and the namespace
controller). Pod templates set ``terminationGracePeriodSeconds: 0``: a pod on a node otherwise stays
Terminating for 30 s, as upstream's does, which would only slow these tests. Each scenario
compares the preview with what the real delete then removed (and, for orphaning, with what lost its
ownerReference).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.slow

WORKLOAD_KINDS = "deployments,replicasets,statefulsets,controllerrevisions,pods,persistentvolumeclaims,configmaps"
POD_SPEC = {"terminationGracePeriodSeconds": 0, "containers": [{"name": "main", "image": "nginx:1.25"}]}


def run(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kubeloop.cli", *args[1:]] if args[0] == "kubeloop" else list(args)
    result = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def apply(env: dict[str, str], obj: dict[str, Any]) -> dict[str, Any]:
    return json.loads(run(env, "kubectl", "create", "-o", "json", "-f", "-", stdin=json.dumps(obj)).stdout)  # type: ignore[no-any-return]


def objects(env: dict[str, str], ns: str, kinds: str = WORKLOAD_KINDS) -> dict[str, dict[str, Any]]:
    """uid -> object, for the workload kinds in ``ns``."""
    got = json.loads(run(env, "kubectl", "get", kinds, "-n", ns, "-o", "json").stdout)
    return {i["metadata"]["uid"]: i for i in got["items"]}


def preview(env: dict[str, str], target: str, ns: str, cascade: str = "background") -> dict[str, Any]:
    args = ["kubeloop", "delete", target, "--cascade", cascade, "-o", "json"]
    if not target.startswith(("namespace/", "ns/")):
        args += ["-n", ns]
    return json.loads(run(env, *args).stdout)  # type: ignore[no-any-return]


def uids(entries: list[dict[str, Any]], *kinds: str) -> set[str]:
    return {e["ref"]["uid"] for e in entries if not kinds or e["ref"]["kind"] in kinds}


def wait_until(check: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        time.sleep(0.2)


def owned_by(obj: dict[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or ())


def of_kind(objs: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs.values() if o["kind"] == kind]


def deployment(name: str, ns: str, replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": POD_SPEC}}}


def running_deployment(env: dict[str, str], name: str, ns: str, replicas: int = 2) -> dict[str, dict[str, Any]]:
    """Create a Deployment and wait for its ReplicaSet and pods (owned, scheduled)."""
    apply(env, deployment(name, ns, replicas))

    def ready() -> dict[str, dict[str, Any]] | None:
        objs = objects(env, ns)
        pods = [p for p in of_kind(objs, "Pod") if p["metadata"].get("ownerReferences") and p["spec"].get("nodeName")]
        return objs if len(pods) == replicas and len(of_kind(objs, "ReplicaSet")) == 1 else None

    return wait_until(ready, what=f"deployment {name} with {replicas} pods")  # type: ignore[no-any-return]


def test_statefulset_cascade_orphan_keeps_pods_and_claims_without_owner_references(
    kubectl_env: dict[str, str], namespace: str
) -> None:
    env, ns = kubectl_env, namespace
    # whenDeleted=Delete makes the StatefulSet own its claims, so orphaning has to strip them too.
    apply(env, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": ns},
                "spec": {"replicas": 2, "serviceName": "db", "podManagementPolicy": "Parallel",
                         "selector": {"matchLabels": {"app": "db"}},
                         "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                         "template": {"metadata": {"labels": {"app": "db"}}, "spec": POD_SPEC},
                         "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                             "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})

    def owned() -> dict[str, dict[str, Any]] | None:
        objs = objects(env, ns)
        sts = of_kind(objs, "StatefulSet")[0]
        uid = sts["metadata"]["uid"]
        pods = [p for p in of_kind(objs, "Pod") if owned_by(p, uid)]
        claims = [c for c in of_kind(objs, "PersistentVolumeClaim") if owned_by(c, uid)]
        return objs if len(pods) == 2 and len(claims) == 2 else None

    before = wait_until(owned, what="statefulset db with 2 owned pods and claims")
    sts_uid = of_kind(before, "StatefulSet")[0]["metadata"]["uid"]
    impact = preview(env, "statefulset/db", ns, "orphan")
    assert [e["ref"]["kind"] for e in impact["deleted"]] == ["StatefulSet"]
    orphaned = uids(impact["orphaned"])
    expected_orphans = {uid for uid, o in before.items() if owned_by(o, sts_uid)}
    assert orphaned == expected_orphans
    assert {e["ref"]["kind"] for e in impact["orphaned"]} >= {"Pod", "PersistentVolumeClaim"}
    assert {d["fate"] for d in impact["data"] if d["ref"]["kind"] == "PersistentVolumeClaim"} == {"kept"}

    run(env, "kubectl", "delete", "statefulset", "db", "-n", ns, "--cascade=orphan")

    def orphaned_everything() -> dict[str, dict[str, Any]] | None:
        objs = objects(env, ns)
        return objs if not any(owned_by(o, sts_uid) for o in objs.values()) else None

    after = wait_until(orphaned_everything, what="ownerReferences to the StatefulSet removed")
    assert set(before) - set(after) == uids(impact["deleted"]) == {sts_uid}
    assert orphaned <= set(after)
    assert len(of_kind(after, "Pod")) == 2 and len(of_kind(after, "PersistentVolumeClaim")) == 2


def test_deployment_cascade_foreground_keeps_the_owner_until_its_blocking_pods_are_gone(
    kubectl_env: dict[str, str], namespace: str
) -> None:
    env, ns = kubectl_env, namespace
    objs = running_deployment(env, "web", ns)
    held = of_kind(objs, "Pod")[0]["metadata"]["name"]
    run(env, "kubectl", "patch", "pod", held, "-n", ns, "--type=merge", "-p",
        '{"metadata":{"finalizers":["example.com/hold"]}}')
    impact = preview(env, "deployment/web", ns, "foreground")
    predicted = uids(impact["deleted"])
    assert sorted(e["ref"]["kind"] for e in impact["deleted"]) == ["Deployment", "Pod", "Pod", "ReplicaSet"]
    assert any(f["finalizer"] == "example.com/hold" and f["blocks"] for f in impact["finalizers"])
    before = objects(env, ns)

    run(env, "kubectl", "delete", "deployment", "web", "-n", ns, "--cascade=foreground", "--wait=false")

    def only_held_pod_left() -> bool:
        pods = of_kind(objects(env, ns), "Pod")
        return len(pods) == 1 and pods[0]["metadata"]["name"] == held and bool(pods[0]["metadata"].get("deletionTimestamp"))

    wait_until(only_held_pod_left, what="the unheld pod deleted, the held one terminating")
    waiting = objects(env, ns)
    for kind in ("Deployment", "ReplicaSet"):
        (owner,) = of_kind(waiting, kind)
        assert owner["metadata"]["deletionTimestamp"] and owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    listed = run(env, "kubectl", "get", "deployment", "web", "-n", ns, "-o", "name").stdout.split()
    assert listed == ["deployment.apps/web"]

    run(env, "kubectl", "patch", "pod", held, "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')

    wait_until(lambda: not set(objects(env, ns)) & predicted, what="the deployment and its chain gone")
    assert set(before) - set(objects(env, ns)) == predicted


def test_namespace_delete_lists_workloads_in_get_all_while_terminating_then_removes_what_the_preview_said(
    kubectl_env: dict[str, str], namespace: str
) -> None:
    env, ns = kubectl_env, namespace
    running_deployment(env, "web", ns)
    apply(env, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}})
    before = objects(env, ns)
    impact = preview(env, f"namespace/{ns}", ns)
    kinds = ("Deployment", "ReplicaSet", "Pod", "ConfigMap")
    assert uids(impact["deleted"], *kinds) == set(before)

    run(env, "kubectl", "delete", "namespace", ns, "--wait=false")

    # The namespace controller waits 5 s (namespaceDeletionGracePeriod) before removing content.
    listed = run(env, "kubectl", "get", "all", "-n", ns, "-o", "name").stdout.split()
    assert "deployment.apps/web" in listed
    assert any(n.startswith("replicaset.apps/web-") for n in listed)
    assert sum(n.startswith("pod/web-") for n in listed) == 2
    phase = json.loads(run(env, "kubectl", "get", "namespace", ns, "-o", "json").stdout)["status"]["phase"]
    assert phase == "Terminating"

    def namespace_gone() -> bool:
        result = run(env, "kubectl", "get", "namespace", ns, "--ignore-not-found", "-o", "name", check=False)
        return result.returncode == 0 and not result.stdout.strip()

    wait_until(namespace_gone, timeout=90, what=f"namespace {ns} gone")
    everywhere = json.loads(run(env, "kubectl", "get", WORKLOAD_KINDS, "-A", "-o", "json").stdout)["items"]
    assert not {i["metadata"]["uid"] for i in everywhere} & uids(impact["deleted"])
