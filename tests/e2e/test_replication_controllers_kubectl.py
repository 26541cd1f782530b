"""ReplicationControllers with kubectl 1.32 against ``kubeloop up``: an old-style manifest (no selector)
through ``kubectl create -f``, ``kubectl scale rc``, ``kubectl get rc`` (printReplicationController's
columns, ``-o wide``, category ``all``), ``kubectl explain rc``, and ``kubectl delete rc``, whose
``propagationPolicy=Background`` lets the garbage collector remove the pods.

The pod template sets ``terminationGracePeriodSeconds: 0``: a pod on a node otherwise stays Terminating
for 30 s, as upstream's does, which would only slow the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._kubectl import table

pytestmark = pytest.mark.slow


def _until(check: Any, what: str, tries: int = 1200) -> Any:
    import time

    for _ in range(tries):
        if result := check():
            return result
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen")


def _pods(kubectl: Any, namespace: str) -> list[dict[str, Any]]:
    items = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "app=web", "-o", "json").stdout)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_kubectl_creates_scales_lists_and_deletes_a_replication_controller(
        kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(f"""apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  namespace: {namespace}
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: nginx
        image: nginx:1.25
""")
    assert kubectl("create", "-f", str(manifest)).stdout.strip() == "replicationcontroller/web created"
    rc = json.loads(kubectl("get", "rc", "web", "-n", namespace, "-o", "json").stdout)
    assert (rc["spec"]["selector"], rc["metadata"]["labels"]) == ({"app": "web"}, {"app": "web"})
    _until(lambda: len(_pods(kubectl, namespace)) == 2, "two pods")
    for pod in _pods(kubectl, namespace):
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["apiVersion"], ref["kind"], ref["uid"]) == ("v1", "ReplicationController", rc["metadata"]["uid"])

    assert kubectl("scale", "rc", "web", "-n", namespace, "--replicas=3").stdout.strip() == "replicationcontroller/web scaled"
    _until(lambda: len(_pods(kubectl, namespace)) == 3, "a third pod")

    def listed() -> list[list[str]] | None:
        rows = table(kubectl("get", "rc", "-n", namespace).stdout)
        return rows if rows[1][:4] == ["web", "3", "3", "3"] else None

    rows = _until(listed, "three ready replicas")
    assert rows[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    wide = table(kubectl("get", "rc", "web", "-n", namespace, "-o", "wide").stdout)
    assert wide[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1][5:] == ["nginx", "nginx:1.25", "app=web"]
    assert "replicationcontroller/web" in kubectl("get", "all", "-n", namespace, "-o", "name").stdout.split()
    explained = kubectl("explain", "rc.spec.selector").stdout
    assert "KIND:       ReplicationController" in explained and "FIELD: selector <map[string]string>" in explained
    resources = {r[0]: r for r in table(kubectl("api-resources", "--api-group=").stdout)[1:]}
    assert resources["replicationcontrollers"] == ["replicationcontrollers", "rc", "v1", "true", "ReplicationController"]
    assert resources["podtemplates"] == ["podtemplates", "v1", "true", "PodTemplate"]

    assert kubectl("delete", "rc", "web", "-n", namespace).stdout.strip() == 'replicationcontroller "web" deleted'
    _until(lambda: not _pods(kubectl, namespace), "the pods' deletion")
    assert kubectl("get", "rc", "-n", namespace, "-o", "name").stdout.strip() == ""
