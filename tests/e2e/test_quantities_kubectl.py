"""kubectl against ``kubeloop up``: quantities come back in the canonical form a real cluster writes
(apimachinery ``resource.Quantity`` MarshalJSON), and a bad one is refused with the decode error
kubectl prints for a real cluster (handlers/rest.go ``transformDecodeError``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._kubectl import eventually

pytestmark = pytest.mark.slow

POD = """
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  containers:
  - name: app
    image: nginx:1.25
    resources:
      requests: {cpu: 1000m, memory: 0.1Gi}
      limits: {cpu: 1.5, memory: 1024Mi}
"""


def test_kubectl_apply_reads_back_canonical_quantities_and_a_bad_one_is_refused(
        kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    pod = json.loads(kubectl("get", "pod", "sized", "-n", namespace, "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "107374182400m"},
        "limits": {"cpu": "1500m", "memory": "1Gi"},
    }
    assert pod["status"]["qosClass"] == "Burstable"
    # Applying the manifest again: kubectl's three-way patch sees "1000m" against the live "1" and sends
    # it (so it prints "configured", as against a real cluster), and the server reads it as the same value.
    again = kubectl("apply", "-n", namespace, "-f", str(manifest))
    assert again.stdout.strip() == "pod/sized configured"
    after = json.loads(kubectl("get", "pod", "sized", "-n", namespace, "-o", "json").stdout)
    assert after["spec"]["containers"][0]["resources"] == pod["spec"]["containers"][0]["resources"]

    manifest.write_text(POD.replace("name: sized", "name: broken").replace("cpu: 1000m", "cpu: abc"))
    result = kubectl("create", "-n", namespace, "-f", str(manifest), "--validate=false", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'Error from server (BadRequest): error when creating "{manifest}": Pod in version "v1" cannot be handled '
        "as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    assert kubectl("get", "pod", "broken", "-n", namespace, check=False).returncode == 1


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: sized}
spec:
  replicas: 0
  selector: {matchLabels: {app: sized}}
  template:
    metadata: {labels: {app: sized}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        resources:
          limits: {cpu: "CPU", memory: MEMORY}
"""


def test_kubectl_server_side_apply_of_equal_quantities_writes_nothing_and_rounds_to_a_milli(
        kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "deployment.yaml"

    def apply(cpu: str, memory: str) -> dict[str, Any]:
        manifest.write_text(DEPLOYMENT.replace("CPU", cpu).replace("MEMORY", memory))
        result = kubectl("apply", "--server-side", "-n", namespace, "-f", str(manifest))
        assert result.stdout.strip() == "deployment.apps/sized serverside-applied"
        return dict(json.loads(kubectl("get", "deployment", "sized", "-n", namespace, "-o", "json").stdout))

    def settled() -> dict[str, Any] | None:
        # The deployment controller writes the set's status after the create (observedGeneration, then the
        # Progressing reason NewReplicaSetAvailable): only once it is done does an unchanged resourceVersion
        # say that the second apply wrote nothing.
        got = dict(json.loads(kubectl("get", "deployment", "sized", "-n", namespace, "-o", "json").stdout))
        status = got.get("status", {})
        reasons = {c["type"]: c.get("reason") for c in status.get("conditions", [])}
        done = status.get("observedGeneration") == got["metadata"]["generation"]
        return got if done and reasons.get("Progressing") == "NewReplicaSetAvailable" else None

    apply("1", "1Gi")
    first = eventually(settled)
    again = apply("1000m", "1024Mi")
    assert again["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # A limit finer than a milli is rounded up by defaulting (SetDefaults_ResourceList): a new template.
    rounded = apply("100u", "1Gi")
    assert rounded["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1m", "memory": "1Gi"}}
    assert rounded["metadata"]["generation"] == 2
