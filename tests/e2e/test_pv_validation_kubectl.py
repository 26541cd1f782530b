"""kubectl against ``kubeloop up``: a PersistentVolume that upstream's API validation refuses
(k/k ``pkg/apis/core/validation`` ``ValidatePersistentVolumeSpec``, release 1.32) is refused with
upstream's 422, printed by kubectl as it prints a real cluster's; a volume's source is immutable
(``ValidatePersistentVolumeUpdate``)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow

BAD_VOLUME = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: NAME}
spec:
  accessModes: [ReadWriteOncePod, ReadWriteMany]
  persistentVolumeReclaimPolicy: Keep
  hostPath: {path: /mnt/data}
  nfs: {server: nfs.example, path: /exports}
"""

VOLUME = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: NAME}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /mnt/PATH}
"""


def test_kubectl_apply_of_an_invalid_volume_prints_upstreams_error(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    name = f"{namespace}-bad"
    manifest = tmp_path / "pv.yaml"
    manifest.write_text(BAD_VOLUME.replace("NAME", name))
    result = kubectl("apply", "-f", str(manifest), check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f'The PersistentVolume "{name}" is invalid: ',
        "* spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
        "* spec.capacity: Required value",
        '* spec.capacity: Unsupported value: core.ResourceList(nil): supported values: "storage"',
        '* spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"',
        "* spec.nfs: Forbidden: may not specify more than 1 volume type",
    ]
    missing = kubectl("get", "pv", name, check=False)
    assert missing.returncode == 1
    assert f'persistentvolumes "{name}" not found' in missing.stderr


def test_kubectl_apply_may_not_change_a_volumes_source(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    name = f"{namespace}-fixed"
    manifest = tmp_path / "pv.yaml"
    manifest.write_text(VOLUME.replace("NAME", name).replace("PATH", "one"))
    try:
        kubectl("apply", "-f", str(manifest))
        manifest.write_text(VOLUME.replace("NAME", name).replace("PATH", "two"))
        result = kubectl("apply", "-f", str(manifest), check=False)
        assert result.returncode == 1
        assert result.stderr.splitlines()[:3] == [
            f'The PersistentVolume "{name}" is invalid: spec.persistentvolumesource: Forbidden: '
            "spec.persistentvolumesource is immutable after creation",
            '- spec.hostPath.path: "/mnt/one"',
            '+ spec.hostPath.path: "/mnt/two"',
        ]
        assert kubectl("get", "pv", name, "-o", "jsonpath={.spec.hostPath.path}").stdout == "/mnt/one"
    finally:
        kubectl("delete", "pv", name, "--wait=false", check=False)
