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


IMAGE_PODS = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  terminationGracePeriodSeconds: 0
  NODE_LINE
  containers: [{name: app, image: IMAGE}]
"""


def _image_pod(name: str, image: str, node: str | None) -> str:
    return IMAGE_PODS.replace("NAME", name).replace("IMAGE", image).replace(
        "NODE_LINE", f"nodeName: {node}" if node else "")


def test_a_pod_goes_to_the_node_that_already_holds_its_image(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    """ImageLocality (kube-scheduler 1.32, weight 1): the simulated kubelet lists the images of pods it
    ran in ``status.images``, and a pod with the same image prefers that node."""
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    names = sorted(n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("kubeloop-node-"))
    if len(names) < 2:
        pytest.skip("this build's controller manager does not run the node simulator")
    target = names[-1]
    image = "registry.example/kubeloop-e2e/locality:114"  # no other test runs it; 249 MiB by its name
    warm = tmp_path / "warm.yaml"
    warm.write_text(_image_pod("warm", image, target))
    kubectl("apply", "-n", namespace, "-f", str(warm))
    kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/warm", "--timeout=30s")
    size = 0
    for _ in range(200):
        listed = json.loads(kubectl("get", "node", target, "-o", "json").stdout)["status"].get("images") or []
        sizes = [i["sizeBytes"] for i in listed if image in i["names"]]
        if sizes:
            size = sizes[0]
            break
    assert size > 249 * 1024 * 1024
    if size / len(names) < 40 * 1024 * 1024:
        pytest.skip("the image spread over this many nodes scores below ImageLocality's 23 MiB floor")
    follower = tmp_path / "follower.yaml"
    follower.write_text(_image_pod("follower", image, None))
    kubectl("apply", "-n", namespace, "-f", str(follower))
    kubectl("wait", "-n", namespace, "--for=condition=PodScheduled", "pod/follower", "--timeout=30s")
    node = kubectl("get", "pod", "follower", "-n", namespace, "-o", "jsonpath={.spec.nodeName}").stdout
    assert node == target
