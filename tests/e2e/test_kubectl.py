"""kubectl 1.32 against ``kubeloop up``: get, get -w, delete (every --cascade, --dry-run=server), patch, label, scale."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import Any

import pytest


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }  # fmt: skip


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def create(cluster: Any, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    group = "api/v1" if obj["apiVersion"] == "v1" else f"apis/{obj['apiVersion']}"
    plural = obj["kind"].lower() + "s"
    with cluster.http() as http:
        r = http.post(f"/{group}/namespaces/{namespace}/{plural}", json=obj)
        assert r.status_code == 201, r.text
        return dict(r.json())


def get(cluster: Any, path: str) -> Any:
    with cluster.http() as http:
        return http.get(path)


def test_get_lists_the_system_namespaces_and_objects(cluster: Any, namespace: str, kubectl: Any) -> None:
    out = kubectl("get", "namespaces").stdout
    for name in ("default", "kube-system", "kube-public", "kube-node-lease", namespace):
        assert name in out
    create(cluster, namespace, configmap("one", a="1"))
    assert kubectl("get", "configmap", "one", "-n", namespace, "-o", "jsonpath={.data.a}").stdout == "1"
    missing = kubectl("get", "configmap", "nope", "-n", namespace, check=False)
    assert missing.returncode == 1
    assert 'configmaps "nope" not found' in missing.stderr


def test_get_watch_streams_changes_made_by_another_client(cluster: Any, namespace: str, kubectl_env: dict[str, str]) -> None:
    create(cluster, namespace, configmap("before"))
    proc = subprocess.Popen(
        ["kubectl", "get", "configmaps", "-n", namespace, "-w"],
        env=kubectl_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()

    def wait_for(name: str) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line.split() and line.split()[0] == name:
                return line
        raise AssertionError(f"kubectl get -w never printed {name}")

    try:
        wait_for("before")
        create(cluster, namespace, configmap("during", x="1"))
        assert wait_for("during").split()[1] == "1"  # DATA column
    finally:
        proc.kill()
        proc.wait()
        stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()


def test_delete_dry_run_server_keeps_the_object(cluster: Any, namespace: str, kubectl: Any) -> None:
    create(cluster, namespace, configmap("keep"))
    out = kubectl("delete", "configmap", "keep", "-n", namespace, "--dry-run=server").stdout
    assert 'configmap "keep" deleted (server dry run)' in out
    assert get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/keep").status_code == 200


def wait_until(check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_delete_with_every_cascade_mode(cluster: Any, namespace: str, kubectl: Any, cascade: str) -> None:
    # ``kubeloop up`` runs the garbage collector, so each mode plays out to its end state.
    owner = create(cluster, namespace, configmap(f"owner-{cascade}"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"owner-{cascade}", "uid": owner["metadata"]["uid"],
           "blockOwnerDeletion": True}  # fmt: skip
    dependent = configmap(f"dep-{cascade}")
    dependent["metadata"]["ownerReferences"] = [ref]
    if cascade == "foreground":
        dependent["metadata"]["finalizers"] = ["example.com/hold"]  # keeps the dependent, hence the owner
    create(cluster, namespace, dependent)
    out = kubectl("delete", "configmap", f"owner-{cascade}", "-n", namespace, f"--cascade={cascade}", "--wait=false")
    assert f'configmap "owner-{cascade}" deleted' in out.stdout

    owner_path = f"/api/v1/namespaces/{namespace}/configmaps/owner-{cascade}"
    dependent_path = f"/api/v1/namespaces/{namespace}/configmaps/dep-{cascade}"
    if cascade == "background":
        assert get(cluster, owner_path).status_code == 404  # gone at once; dependents follow
        assert wait_until(lambda: get(cluster, dependent_path).status_code == 404), "dependent survived"
    elif cascade == "foreground":
        meta = get(cluster, owner_path).json()["metadata"]  # stays, deleting, until blocking dependents go
        assert "deletionTimestamp" in meta and meta["finalizers"] == ["foregroundDeletion"]
        kubectl("patch", "configmap", f"dep-{cascade}", "-n", namespace, "--type=json",
                "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')  # fmt: skip
        assert wait_until(lambda: get(cluster, owner_path).status_code == 404), "owner never went away"
        assert get(cluster, dependent_path).status_code == 404
    else:
        assert wait_until(lambda: get(cluster, owner_path).status_code == 404), "owner never went away"
        orphan = get(cluster, dependent_path)
        assert orphan.status_code == 200
        assert not orphan.json()["metadata"].get("ownerReferences")


def test_patch_with_strategic_merge_and_json_types(cluster: Any, namespace: str, kubectl: Any) -> None:
    create(cluster, namespace, configmap("p", a="1"))
    create(cluster, namespace, deployment("pd"))
    ns = ["-n", namespace]
    kubectl("patch", "configmap", "p", *ns, "-p", '{"data":{"b":"2"}}')
    kubectl("patch", "configmap", "p", *ns, "--type=merge", "-p", '{"data":{"c":"3"}}')
    kubectl("patch", "configmap", "p", *ns, "--type=json", "-p", '[{"op":"remove","path":"/data/a"}]')
    assert get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/p").json()["data"] == {"b": "2", "c": "3"}
    # Strategic merge patch merges containers by name instead of replacing the list.
    kubectl("patch", "deployment", "pd", *ns, "-p",
            '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"},{"name":"side","image":"busybox"}]}}}}')  # fmt: skip
    containers = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/pd").json()["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("c", "nginx:2"), ("side", "busybox")]


def test_label_and_select_by_label(cluster: Any, namespace: str, kubectl: Any) -> None:
    create(cluster, namespace, configmap("l1"))
    create(cluster, namespace, configmap("l2"))
    kubectl("label", "configmap", "l1", "-n", namespace, "tier=db")
    assert kubectl("get", "configmaps", "-n", namespace, "-l", "tier=db", "-o", "name").stdout.split() == ["configmap/l1"]
    again = kubectl("label", "configmap", "l1", "-n", namespace, "tier=web", check=False)
    assert again.returncode != 0 and "already has a value (db)" in again.stderr
    kubectl("label", "configmap", "l1", "-n", namespace, "tier-")
    assert "tier" not in (get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/l1").json()["metadata"].get("labels") or {})


def test_scale_a_deployment_through_the_scale_subresource(cluster: Any, namespace: str, kubectl: Any) -> None:
    create(cluster, namespace, deployment("s", replicas=1))
    assert "deployment.apps/s scaled" in kubectl("scale", "deployment", "s", "-n", namespace, "--replicas=4").stdout
    assert get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/s").json()["spec"]["replicas"] == 4
    stale = kubectl("scale", "deployment", "s", "-n", namespace, "--replicas=2", "--current-replicas=3", check=False)
    assert stale.returncode != 0


def test_auth_can_i_and_whoami(cluster: Any, namespace: str, kubectl: Any) -> None:
    assert kubectl("auth", "can-i", "create", "pods", "-n", namespace).stdout.strip() == "yes"
    no = kubectl("auth", "can-i", "create", "pods", "-n", namespace, "--as", "bob", check=False)
    assert no.returncode == 1 and no.stdout.strip() == "no"
    assert "kubernetes-admin" in kubectl("auth", "whoami").stdout
    rules = kubectl("auth", "can-i", "--list", "-n", namespace, "--as", "bob").stdout
    assert "selfsubjectaccessreviews.authorization.k8s.io" in rules
    assert "*.*" not in rules
    admin = kubectl("auth", "can-i", "--list", "-n", namespace).stdout.splitlines()
    # cluster-admin's two rules, each one row (the privileged group adds no rules of its own, as upstream).
    assert [line.split() for line in admin if line.split()[:2] in (["*.*", "[]"], ["[*]", "[]"])] == [
        ["*.*", "[]", "[]", "[*]"], ["[*]", "[]", "[*]"]]
    forbidden = kubectl("get", "configmaps", "-n", namespace, "--as", "bob", check=False)
    assert forbidden.returncode == 1
    assert (
        f'User "bob" cannot list resource "configmaps" in API group "" in the namespace "{namespace}"'
        in forbidden.stderr
    )
