"""kubectl against ``kubeloop up``: a DaemonSet applied, listed, rolled out, updated, and rolled back.

``kubectl apply`` a DaemonSet, ``kubectl rollout status ds/x`` until every simulated node runs an
available pod, ``kubectl get ds`` with printDaemonSet's columns, ``kubectl set image`` and
``kubectl rollout status`` again, ``kubectl rollout history`` (ControllerRevisions) and ``kubectl rollout
undo`` (the previous revision's data as a strategic merge patch), and upstream's validation messages.
The pods stop at once (terminationGracePeriodSeconds 0) so a rollout does not wait out grace periods.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._kubectl import table

pytestmark = pytest.mark.slow

DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: c, image: "nginx:1.25"}]
"""


def _nodes(kubectl: Any) -> list[str]:
    return sorted(n["metadata"]["name"] for n in json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"])


def _pods(kubectl: Any, namespace: str) -> list[dict[str, Any]]:
    items = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "app=agent", "-o", "json").stdout)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _on(nodes: list[str]) -> str:
    """The DaemonSet held to ``nodes`` by required node affinity on their hostname label: other tests of the
    shared cluster add nodes no kubelet runs (and remove them), where a daemon pod would never be available."""
    term = f"{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{', '.join(nodes)}]}}]}}"
    affinity = f"      affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{term}]}}}}}}\n"
    return DS.replace("      containers:", affinity + "      containers:")


def test_daemonset_apply_get_rollout_set_image_history_and_undo(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    nodes = [name for name in _nodes(kubectl) if name.startswith("kubeloop-node-")]  # the simulated ones
    if not nodes:
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(_on(nodes))
    assert "daemonset.apps/agent created" in kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout
    done = kubectl("rollout", "status", "ds/agent", "-n", namespace, "--timeout=60s", timeout=90).stdout
    assert 'daemon set "agent" successfully rolled out' in done
    count = str(len(nodes))
    rows = table(kubectl("get", "ds", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
    assert rows[1][:7] == ["agent", count, count, count, count, count, "<none>"]
    wide = table(kubectl("get", "daemonsets", "-n", namespace, "-o", "wide").stdout)
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"] and wide[1][-3:] == ["c", "nginx:1.25", "app=agent"]
    assert sorted(p["spec"]["nodeName"] for p in _pods(kubectl, namespace)) == nodes
    described = kubectl("describe", "ds", "agent", "-n", namespace).stdout
    assert f"Desired Number of Nodes Scheduled: {count}" in described
    assert f"Pods Status:  {count} Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "SuccessfulCreate" in described and "daemonset-controller" in described
    # `kubectl get all` lists it (category all).
    assert "daemonset.apps/agent" in kubectl("get", "all", "-n", namespace).stdout

    kubectl("set", "image", "ds/agent", "c=nginx:1.27", "-n", namespace)
    done = kubectl("rollout", "status", "ds/agent", "-n", namespace, "--timeout=90s", timeout=120).stdout
    assert 'daemon set "agent" successfully rolled out' in done
    pods = _pods(kubectl, namespace)
    assert sorted(p["spec"]["nodeName"] for p in pods) == nodes
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"}
    history = table(kubectl("rollout", "history", "ds/agent", "-n", namespace).stdout)
    assert history[1:] == [["REVISION", "CHANGE-CAUSE"], ["1", "<none>"], ["2", "<none>"]]

    undone = kubectl("rollout", "undo", "ds/agent", "-n", namespace).stdout
    assert "daemonset.apps/agent rolled back" in undone
    kubectl("rollout", "status", "ds/agent", "-n", namespace, "--timeout=90s", timeout=120)
    assert {p["spec"]["containers"][0]["image"] for p in _pods(kubectl, namespace)} == {"nginx:1.25"}
    history = table(kubectl("rollout", "history", "ds/agent", "-n", namespace).stdout)
    assert [row[0] for row in history[2:]] == ["2", "3"]
    ds = json.loads(kubectl("get", "ds", "agent", "-n", namespace, "-o", "json").stdout)
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "3"
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["status"]["observedGeneration"] == ds["metadata"]["generation"] == 3
    # Re-applying the original manifest changes nothing: the template is the applied one again.
    assert "daemonset.apps/agent unchanged" in kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout


def test_kubectl_sees_upstreams_daemonset_validation(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(DS.replace("matchLabels: {app: agent}", "matchLabels: {app: other}")
                        .replace("terminationGracePeriodSeconds: 0", "restartPolicy: Never"))
    refused = kubectl("apply", "-n", namespace, "-f", str(manifest), check=False)
    assert refused.returncode != 0
    assert 'The DaemonSet "agent" is invalid:' in refused.stderr
    assert ('spec.template.metadata.labels: Invalid value: map[string]string{"app":"agent"}: '
            "`selector` does not match template `labels`") in refused.stderr
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in refused.stderr
    assert kubectl("get", "ds", "agent", "-n", namespace, check=False).returncode != 0
