"""kubectl against ``kubeloop up`` with the simulated cluster: nodes, a pod that runs, a claim that binds,
and ``kubectl drain`` stopped by a disruption budget (eviction 429), then allowed once it is lifted."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.slow

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: nginx:1.25}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
"""


def test_pod_runs_claim_binds_and_drain_respects_the_budget(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    names = sorted(n["metadata"]["name"] for n in nodes)
    if "kubeloop-node-1" not in names:
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "web.yaml"
    manifest.write_text(POD)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/web", "--timeout=30s")
    kubectl("wait", "-n", namespace, "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=30s")
    kubectl("wait", "-n", namespace, "--for=jsonpath={.status.currentHealthy}=1", "pdb/web", "--timeout=30s")
    node = kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.nodeName}").stdout
    refused = kubectl("drain", node, "--pod-selector=app=web", "--ignore-daemonsets", "--force", "--timeout=3s",
                      check=False, timeout=60)
    assert refused.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in refused.stderr
    kubectl("uncordon", node)
    kubectl("delete", "pdb", "web", "-n", namespace)
    kubectl("drain", node, "--pod-selector=app=web", "--ignore-daemonsets", "--force", "--timeout=30s", timeout=60)
    kubectl("wait", "-n", namespace, "--for=delete", "pod/web", "--timeout=30s")
    kubectl("uncordon", node)
