"""kubectl against ``kubeloop up``: node affinity ``matchFields`` on ``metadata.name`` picks the node
(component-helpers ``scheduling/corev1/nodeaffinity``), required and preferred."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: nginx:1.25}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [NODE]}]
---
apiVersion: v1
kind: Pod
metadata: {name: preferring}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: nginx:1.25}]
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference:
          matchFields: [{key: metadata.name, operator: In, values: [NODE]}]
"""


def test_match_fields_on_metadata_name_places_pods(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    names = sorted(n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("kubeloop-node-"))
    if len(names) < 2:
        pytest.skip("this build's controller manager does not run the node simulator")
    target = names[-1]
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(PODS.replace("NODE", target))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    for pod in ("pinned", "preferring"):
        kubectl("wait", "-n", namespace, "--for=condition=PodScheduled", f"pod/{pod}", "--timeout=30s")
        node = kubectl("get", "pod", pod, "-n", namespace, "-o", "jsonpath={.spec.nodeName}").stdout
        assert node == target, pod
