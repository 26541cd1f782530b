"""kubectl against ``kubeloop up``: node affinity ``matchFields`` on ``metadata.name`` picks the node
(component-helpers ``scheduling/corev1/nodeaffinity``), required and preferred."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
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


def test_a_pod_goes_to_the_node_that_already_holds_its_image(start_kubeloop: Any, tmp_path: Path) -> None:
    """ImageLocality (kube-scheduler 1.32, weight 1): the simulated kubelet lists the images of pods it
    ran in ``status.images``, and a pod with the same image prefers that node. A private cluster, so
    the other tests' pods do not tip the resource scores."""
    server = start_kubeloop(tmp_path / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(tmp_path), KUBECACHEDIR=str(tmp_path / "cache"), KUBECONFIG=str(server.kubeconfig))

    def kubectl(*args: str) -> str:
        result = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    names: list[str] = []
    for _ in range(200):
        nodes = json.loads(kubectl("get", "nodes", "-o", "json"))["items"]
        names = sorted(n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("kubeloop-node-"))
        if len(names) >= 2:
            break
        time.sleep(0.05)
    if len(names) < 2:
        pytest.skip("this build's controller manager does not run the node simulator")
    target = names[-1]
    image = "registry.example/kubeloop-e2e/locality:114"  # 249 MiB by its name
    warm = tmp_path / "warm.yaml"
    warm.write_text(_image_pod("warm", image, target))
    kubectl("apply", "-f", str(warm))
    kubectl("wait", "--for=condition=Ready", "pod/warm", "--timeout=30s")
    size = 0
    for _ in range(200):
        listed = json.loads(kubectl("get", "node", target, "-o", "json"))["status"].get("images") or []
        sizes = [i["sizeBytes"] for i in listed if image in i["names"]]
        if sizes:
            size = sizes[0]
            break
        time.sleep(0.05)
    assert size > 249 * 1024 * 1024
    follower = tmp_path / "follower.yaml"
    follower.write_text(_image_pod("follower", image, None))
    kubectl("apply", "-f", str(follower))
    kubectl("wait", "--for=condition=PodScheduled", "pod/follower", "--timeout=30s")
    assert kubectl("get", "pod", "follower", "-o", "jsonpath={.spec.nodeName}") == target
