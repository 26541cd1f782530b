"""kubectl and the official ``kubernetes`` client read a new pod as upstream's strategy stored it.

Upstream: k/k ``pkg/registry/core/pod/strategy.go`` (release-1.32) ``PrepareForCreate``: the
matchLabelKeys merge (``mutatePodAffinity``), the dropped ``hostUsers`` (UserNamespacesSupport, off by
default in 1.32) and the SchedulingGated condition.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kubeloop.server import App

from ._uvicorn import kubectl_for, serve

ANTI = "requiredDuringSchedulingIgnoredDuringExecution"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web", "rev": "7"}},
       "spec": {"hostUsers": False, "schedulingGates": [{"name": "example.com/wait"}],
                "containers": [{"name": "app", "image": "nginx:1.25"}],
                "affinity": {"podAntiAffinity": {ANTI: [{
                    "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}},
                    "matchLabelKeys": ["rev"]}]}}}}
MERGED = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "rev", "operator": "In", "values": ["7"]}]}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_get_shows_the_merged_selector_and_no_dropped_field(real_app: App, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(POD))
    async with kubectl_for(real_app, tmp_path) as kubectl:
        await kubectl("create", "-f", str(manifest))
        shown = json.loads(await kubectl("get", "pod", "p", "-o", "json"))
        row = (await kubectl("get", "pod", "p", "--no-headers")).split()
    # printPod shows the SchedulingGated reason of the PodScheduled condition as the status.
    assert row[:3] == ["p", "0/1", "SchedulingGated"]
    assert shown["spec"]["affinity"]["podAntiAffinity"][ANTI][0]["labelSelector"] == MERGED
    assert "hostUsers" not in shown["spec"]
    assert [(c["type"], c["status"], c["reason"]) for c in shown["status"]["conditions"]] == [
        ("PodScheduled", "False", "SchedulingGated")]


def _create_and_read(url: str) -> Any:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        api = k8s.CoreV1Api(api_client)
        api.create_namespaced_pod("default", POD)
        return api.read_namespaced_pod("p", "default")


async def test_the_kubernetes_client_reads_the_stored_pod(real_app: App) -> None:
    async with serve(real_app) as url:
        read = await asyncio.to_thread(_create_and_read, url)
    selector = read.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0].label_selector
    assert selector.match_labels == {"app": "web"}
    assert [(e.key, e.operator, e.values) for e in selector.match_expressions] == [("rev", "In", ["7"])]
    assert read.spec.host_users is None
    (condition,) = read.status.conditions
    assert (condition.type, condition.status, condition.reason, condition.message) == (
        "PodScheduled", "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
