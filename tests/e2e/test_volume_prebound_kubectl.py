"""kubectl against ``kubeloop up``: a volume pre-bound to a claim by name (``claimRef`` without uid)
is the one the claim binds to, whatever its class, as upstream's ``FindMatchingVolume``
(``IsVolumeBoundToClaim``) returns it before any class, label or phase check."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.slow

MANIFEST = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: NAME}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: elsewhere
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: /mnt/NAME}
  claimRef: {namespace: NS, name: data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {requests: {storage: 1Gi}}
"""


def test_a_claim_binds_to_the_volume_pre_bound_to_it_by_name(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    volumes = json.loads(kubectl("get", "storageclasses", "-o", "json").stdout)["items"]
    if not volumes:
        pytest.skip("this build's controller manager does not run the volume controllers")
    name = f"{namespace}-reserved"
    manifest = tmp_path / "volume.yaml"
    manifest.write_text(MANIFEST.replace("NAME", name).replace("NS", namespace))
    try:
        kubectl("apply", "-n", namespace, "-f", str(manifest))
        kubectl("wait", "-n", namespace, "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=30s")
        assert kubectl("get", "pvc", "data", "-n", namespace, "-o", "jsonpath={.spec.volumeName}").stdout == name
        uid = kubectl("get", "pvc", "data", "-n", namespace, "-o", "jsonpath={.metadata.uid}").stdout
        assert kubectl("get", "pv", name, "-o", "jsonpath={.spec.claimRef.uid}").stdout == uid
    finally:
        kubectl("delete", "pv", name, "--wait=false", check=False)
