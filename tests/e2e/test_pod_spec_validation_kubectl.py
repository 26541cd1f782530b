"""kubectl against ``kubeloop up``: a pod whose containers and volumes upstream's API validation refuses
(k/k ``pkg/apis/core/validation``: ``ValidateVolumes``, ``validateContainers``, ``ValidateVolumeMounts``)
is refused with upstream's 422, and kubectl prints each cause as it does for a real cluster."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow

BAD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  volumes:
  - {name: data, emptyDir: {}}
  - {name: data, configMap: {name: cfg}}
  containers:
  - name: app
    volumeMounts: [{name: logs, mountPath: /logs}]
  - {name: app, image: busybox}
"""


def test_kubectl_apply_of_a_pod_with_bad_containers_and_volumes_prints_upstreams_error(
        kubectl: Any, namespace: str, tmp_path: Any) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(BAD_POD)
    result = kubectl("apply", "-n", namespace, "-f", str(manifest), check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        'The Pod "broken" is invalid: ',
        '* spec.volumes[1].name: Duplicate value: "data"',
        "* spec.containers[0].image: Required value",
        '* spec.containers[0].volumeMounts[0].name: Not found: "logs"',
        '* spec.containers[1].name: Duplicate value: "app"',
    ]
    missing = kubectl("get", "pod", "broken", "-n", namespace, check=False)
    assert missing.returncode == 1
    assert 'pods "broken" not found' in missing.stderr
