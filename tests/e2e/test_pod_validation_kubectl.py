"""kubectl against ``kubeloop up``: a pod whose scheduling constraints upstream's API validation refuses
(k/k ``pkg/apis/core/validation``: ``ValidateNodeFieldSelectorRequirement``, ``ValidateTolerations``)
is refused with upstream's 422, and kubectl prints it as it does for a real cluster."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

pytestmark = pytest.mark.slow

BAD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: misplaced}
spec:
  containers: [{name: app, image: nginx:1.25}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.namespace, operator: In, values: [a, b]}]
  tolerations:
  - {key: dedicated, operator: Exists, value: gpu, effect: NoSchedule}
"""

TERM = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0]"


def test_kubectl_apply_of_a_pod_with_bad_constraints_prints_upstreams_error(
        kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(BAD_POD)
    result = kubectl("apply", "-n", namespace, "-f", str(manifest), check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        'The Pod "misplaced" is invalid: ',
        f"* {TERM}.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
        "for node field selector",
        f'* {TERM}.key: Invalid value: "metadata.namespace": not a valid field selector key',
        "* spec.tolerations[0].operator: Invalid value: \"gpu\": value must be empty when `operator` is 'Exists'",
    ]
    missing = kubectl("get", "pod", "misplaced", "-n", namespace, check=False)
    assert missing.returncode == 1
    assert 'pods "misplaced" not found' in missing.stderr


POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: nginx:1.25}]
"""


def test_kubectl_set_image_apply_and_edit_change_the_image_and_a_restart_policy_patch_is_forbidden(
        kubectl: Any, kubectl_env: dict[str, str], namespace: str, tmp_path: Any) -> None:
    # k/k ValidatePodUpdate: images may change; restartPolicy may not.
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("set", "image", "-n", namespace, "pod/web", "app=nginx:1.27")
    image = kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.containers[0].image}")
    assert image.stdout == "nginx:1.27"
    manifest.write_text(POD.replace("nginx:1.25", "nginx:1.28"))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    image = kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.containers[0].image}")
    assert image.stdout == "nginx:1.28"
    # kubectl edit sends a patch of what the editor changed.
    edited = subprocess.run(["kubectl", "edit", "pod", "web", "-n", namespace],
                            env={**kubectl_env, "KUBE_EDITOR": "sed -i s/nginx:1.28/nginx:1.29/"},
                            capture_output=True, text=True, timeout=60, check=False)
    assert edited.returncode == 0, edited.stderr
    image = kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.containers[0].image}")
    assert image.stdout == "nginx:1.29"
    result = kubectl("patch", "pod", "web", "-n", namespace, "-p", '{"spec":{"restartPolicy":"Never"}}', check=False)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        'The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
        "(allow it to be set to 1 if it was previously negative)")
    assert lines[1:] == ['- spec.restartPolicy: "Always"', '+ spec.restartPolicy: "Never"']
    policy = kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.restartPolicy}")
    assert policy.stdout == "Always"
