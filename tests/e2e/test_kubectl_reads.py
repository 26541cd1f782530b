"""kubectl 1.32 read commands against ``kubeloop up`` (issue 3): explain, get tables for every built-in
kind (``-o wide``, ``-A``, ``--show-labels``), CRD printer columns, ``get -w`` rows, api-resources,
api-versions, describe with events. Each test uses a fresh kubectl HOME and cache.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, configmap, crd, deployment, table, unique

pytestmark = pytest.mark.slow
GROUP = "reads.issue3.kubeloop.test"


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


@pytest.fixture(scope="module")
def gadgets(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kc = Kubectl(cluster, tmp_path_factory.mktemp("crd-home"))
    kc("apply", "-f", kc.write("crd.yaml", crd(GROUP, plural="gadgets", kind="Gadget", short="gdg")))
    kc("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=30s")
    yield GROUP


def test_explain_prints_the_field_documentation(kc: Kubectl, gadgets: str) -> None:
    out = kc("explain", "deployment.spec.strategy").stdout
    assert "GROUP:      apps" in out and "KIND:       Deployment" in out and "VERSION:    v1" in out
    assert "FIELD: strategy <DeploymentStrategy>" in out
    assert "The deployment strategy to use to replace existing pods with new ones." in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out and "type\t<string>" in out
    custom = kc("explain", f"gadgets.{gadgets}.spec").stdout
    assert "What the widget should be." in custom and "How big the widget is." in custom


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def _pod(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _labelled(obj: dict[str, Any], key: str) -> dict[str, Any]:
    obj.setdefault("metadata", {})["labels"] = {"app": key}
    return obj


# (resource, manifest builder, default columns, extra -o wide columns) — k/k pkg/printers/internalversion/printers.go
KINDS: list[tuple[str, Any, list[str], list[str]]] = [
    ("pods", _pod, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]),
    ("configmaps", lambda n, ns: configmap(n, ns, a="1"), ["NAME", "DATA", "AGE"], []),
    ("secrets", lambda n, ns: {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": ns},
                               "stringData": {"a": "b"}}, ["NAME", "TYPE", "DATA", "AGE"], []),
    ("serviceaccounts", lambda n, ns: {"apiVersion": "v1", "kind": "ServiceAccount",
                                       "metadata": {"name": n, "namespace": ns}}, ["NAME", "SECRETS", "AGE"], []),
    ("services", lambda n, ns: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": n, "namespace": ns},
                                "spec": {"ports": [{"port": 80}], "selector": {"app": n}}},
     ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], ["SELECTOR"]),
    ("persistentvolumeclaims", lambda n, ns: {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": n, "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
     ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"],
     ["VOLUMEMODE"]),
    ("deployments", lambda n, ns: deployment(n, ns), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
     ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("replicasets", lambda n, ns: {**deployment(n, ns, replicas=0), "kind": "ReplicaSet"},
     ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("statefulsets", lambda n, ns: {**deployment(n, ns, replicas=0), "kind": "StatefulSet"},
     ["NAME", "READY", "AGE"], ["CONTAINERS", "IMAGES"]),
    ("leases", lambda n, ns: {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                              "metadata": {"name": n, "namespace": ns}, "spec": {"holderIdentity": "me"}},
     ["NAME", "HOLDER", "AGE"], []),
    ("poddisruptionbudgets", lambda n, ns: {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                            "metadata": {"name": n, "namespace": ns},
                                            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": n}}}},
     ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"], []),
    ("roles", lambda n, ns: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                             "metadata": {"name": n, "namespace": ns}, "rules": []}, ["NAME", "CREATED AT"], []),
    ("rolebindings", lambda n, ns: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                    "metadata": {"name": n, "namespace": ns},
                                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                                    "subjects": [{"kind": "User", "name": "ann"}]},
     ["NAME", "ROLE", "AGE"], ["USERS", "GROUPS", "SERVICEACCOUNTS"]),
    ("nodes", lambda n, ns: _node(n), ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
     ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]),
    ("namespaces", lambda n, ns: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}},
     ["NAME", "STATUS", "AGE"], []),
    ("storageclasses", lambda n, ns: {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                      "metadata": {"name": n}, "provisioner": "example.com/none"},
     ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"], []),
]  # fmt: skip


@pytest.mark.parametrize(("resource", "build", "columns", "wide"), KINDS, ids=[k[0] for k in KINDS])
def test_get_prints_upstream_columns_for_every_builtin_kind(
    kc: Kubectl, namespace: str, resource: str, build: Any, columns: list[str], wide: list[str]
) -> None:
    name = unique(resource[:8].rstrip("e"))
    obj = build(name, namespace)
    kc("create", "-f", kc.write("obj.yaml", obj))
    scope = ["-n", namespace] if "namespace" in obj["metadata"] else []
    rows = table(kc("get", resource, name, *scope).stdout)
    assert rows[0] == columns
    assert rows[1][0] == name and len(rows[1]) <= len(columns)
    wide_rows = table(kc("get", resource, name, *scope, "-o", "wide").stdout)
    assert wide_rows[0] == columns + wide


def test_get_all_namespaces_and_show_labels(kc: Kubectl, namespace: str) -> None:
    kc("create", "-f", kc.write("cm.yaml", _labelled(configmap("lab", namespace, a="1"), "shown")))
    rows = table(kc("get", "configmaps", "-A", "--show-labels").stdout)
    assert rows[0] == ["NAMESPACE", "NAME", "DATA", "AGE", "LABELS"]
    mine = [r for r in rows[1:] if r[0] == namespace]
    # Every namespace of a real cluster holds the root-ca-cert-publisher's kube-root-ca.crt.
    assert [(r[1], r[2], r[4]) for r in mine] == [("kube-root-ca.crt", "1", "<none>"), ("lab", "1", "app=shown")]
    ns_rows = table(kc("get", "namespace", namespace, "--show-labels").stdout)
    assert ns_rows[1][-1] == f"kubernetes.io/metadata.name={namespace}"


def test_custom_resources_print_their_additional_printer_columns(kc: Kubectl, namespace: str, gadgets: str) -> None:
    kc.post(f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets",
            {"apiVersion": f"{gadgets}/v1", "kind": "Gadget", "metadata": {"name": "big-one"},
             "spec": {"size": "big", "replicas": 3, "color": "red"}})
    rows = table(kc("get", "gdg", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "SIZE", "REPLICAS", "AGE"]
    assert rows[1][:3] == ["big-one", "big", "3"]
    assert table(kc("get", "gdg", "-n", namespace, "-o", "wide").stdout)[0] == ["NAME", "SIZE", "REPLICAS", "AGE", "COLOR"]


def test_get_watch_prints_a_table_row_per_change(kc: Kubectl, namespace: str, gadgets: str) -> None:
    proc = subprocess.Popen(["kubectl", "get", f"gadgets.{gadgets}", "-n", namespace, "-w"], env=kc.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    out = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in out], daemon=True).start()

    def next_row(name: str) -> list[str]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                row = table(lines.get(timeout=1))
            except queue.Empty:
                continue
            if row and row[0][0] == name:
                return row[0]
        raise AssertionError(f"kubectl get -w never printed {name}")

    try:
        time.sleep(0.5)  # let kubectl list and start its watch
        kc.post(f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets",
                {"apiVersion": f"{gadgets}/v1", "kind": "Gadget", "metadata": {"name": "watched"},
                 "spec": {"size": "small", "replicas": 1}})
        assert next_row("watched")[:3] == ["watched", "small", "1"]
        kc("scale", f"gadgets.{gadgets}/watched", "-n", namespace, "--replicas=4")
        assert next_row("watched")[:3] == ["watched", "small", "4"]
    finally:
        proc.kill()
        proc.wait()
        out.close()
        assert proc.stderr is not None
        proc.stderr.close()


def test_api_resources_and_api_versions_list_what_is_served(kc: Kubectl, gadgets: str) -> None:
    rows = table(kc("api-resources").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name = {r[0]: r for r in rows[1:]}
    assert by_name["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert by_name["gadgets"] == ["gadgets", "gdg", f"{gadgets}/v1", "true", "Gadget"]
    versions = kc("api-versions").stdout.split()
    for gv in ("v1", "apps/v1", "coordination.k8s.io/v1", "policy/v1", f"{gadgets}/v1",
               "apiextensions.k8s.io/v1", "rbac.authorization.k8s.io/v1"):
        assert gv in versions


DESCRIBED: list[tuple[str, str, str, bool]] = [
    # (resource, apiVersion, kind, kubectl's describer prints Events)
    ("pods", "v1", "Pod", True),
    ("deployments", "apps/v1", "Deployment", True),
    ("namespaces", "v1", "Namespace", False),
    ("nodes", "v1", "Node", True),
    ("persistentvolumeclaims", "v1", "PersistentVolumeClaim", True),
    ("configmaps", "v1", "ConfigMap", True),
    ("leases", "coordination.k8s.io/v1", "Lease", True),
    ("poddisruptionbudgets", "policy/v1", "PodDisruptionBudget", True),
    ("statefulsets", "apps/v1", "StatefulSet", True),
    ("replicasets", "apps/v1", "ReplicaSet", True),
    ("serviceaccounts", "v1", "ServiceAccount", True),
]


@pytest.mark.parametrize(("resource", "api_version", "kind", "events"), DESCRIBED, ids=[d[0] for d in DESCRIBED])
def test_describe_every_builtin_kind_lists_its_events(
    kc: Kubectl, namespace: str, resource: str, api_version: str, kind: str, events: bool
) -> None:
    build = next(k[1] for k in KINDS if k[0] == resource)
    name = unique(kind.lower()[:8])
    obj = build(name, namespace)
    created = kc.post(_collection(api_version, resource, namespace if "namespace" in obj["metadata"] else ""), obj)
    _record_event(kc, created, api_version, kind)
    scope = ["-n", namespace] if "namespace" in obj["metadata"] else []
    out = kc("describe", resource, name, *scope).stdout
    assert out.splitlines()[0].split() == ["Name:", name]
    if events:
        assert "Events:" in out
        assert "Normal  Marker" in out and f"marker for {kind} {name}" in out


def test_describe_a_custom_resource_lists_its_events(kc: Kubectl, namespace: str, gadgets: str) -> None:
    created = kc.post(f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets",
                      {"apiVersion": f"{gadgets}/v1", "kind": "Gadget", "metadata": {"name": "described"},
                       "spec": {"size": "tiny"}})
    _record_event(kc, created, f"{gadgets}/v1", "Gadget")
    out = kc("describe", f"gadgets.{gadgets}", "described", "-n", namespace).stdout
    assert "Size:  tiny" in out
    assert "marker for Gadget described" in out


def _collection(api_version: str, resource: str, namespace: str) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{base}/namespaces/{namespace}/{resource}" if namespace else f"{base}/{resource}"


def _record_event(kc: Kubectl, obj: dict[str, Any], api_version: str, kind: str) -> None:
    """A v1 Event about ``obj``, as a controller would record it (cluster-scoped objects: in default)."""
    meta = obj["metadata"]
    ns = meta.get("namespace", "")
    kc.post(f"/api/v1/namespaces/{ns or 'default'}/events", {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{unique('ev')}", "namespace": ns or "default"},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": meta["name"], "namespace": ns,
                           "uid": meta["uid"]},
        "reason": "Marker", "message": f"marker for {kind} {meta['name']}", "type": "Normal", "count": 1,
        "source": {"component": "e2e"}, "firstTimestamp": meta["creationTimestamp"],
        "lastTimestamp": meta["creationTimestamp"],
    })
