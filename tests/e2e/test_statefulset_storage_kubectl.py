"""kubectl against ``kubeloop up``: an invalid StatefulSet is refused with upstream's causes, its claim
templates may not change, and the storage strategies' warnings are printed as kubectl prints a real
cluster's (``Warning: <text>`` on stderr).

Upstream (release 1.32): k/k ``pkg/apis/apps/validation/validation.go`` ``ValidateStatefulSetSpec`` and
``ValidateStatefulSetUpdate``; ``pkg/registry/apps/statefulset/strategy.go`` ``WarningsOnCreate``;
``pkg/api/persistentvolume/util.go`` ``GetWarningsForPersistentVolume``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow
FORBIDDEN = ("spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
             "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def statefulset(name: str, namespace: str, *, storage: str = "1Gi", **spec: Any) -> dict[str, Any]:
    claim = {"metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 0, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}},
                     "volumeClaimTemplates": [claim], **spec}}


def test_kubectl_apply_of_an_invalid_statefulset_prints_upstreams_causes(kc: Kubectl, namespace: str) -> None:
    name = unique("bad")
    body = statefulset(name, namespace, replicas=-1, podManagementPolicy="Sometimes")
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    result = kc("apply", "-f", kc.write("sts.yaml", body), check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f'The StatefulSet "{name}" is invalid: ',
        "* spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
        "* spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        '* spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
        "`selector` does not match template `labels`",
    ]
    assert kc.api_status(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}") == 404


def test_kubectl_apply_may_not_change_claim_templates_and_prints_the_size_warning(kc: Kubectl, namespace: str) -> None:
    name = unique("web")
    created = kc("apply", "-f", kc.write("sts.yaml", statefulset(name, namespace, storage="1.5Gi")))
    assert created.stdout.strip() == f"statefulset.apps/{name} created"
    assert created.stderr.strip() == ""  # 1.5Gi is a whole number of bytes
    stored = kc.api(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}")
    assert stored["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    assert stored["spec"]["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}
    result = kc("apply", "-f", kc.write("bigger.yaml", statefulset(name, namespace, storage="2Gi")), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f'The StatefulSet "{name}" is invalid: {FORBIDDEN}'
    other = unique("frac")
    warned = kc("create", "-f", kc.write("frac.yaml", statefulset(other, namespace, storage="1.5")))
    assert warned.stdout.strip() == f"statefulset.apps/{other} created"
    assert warned.stderr.strip() == ('Warning: spec.volumeClaimTemplates[0].resources.requests[storage]: '
                                     'fractional byte value "1500m" is invalid, must be an integer')


def test_kubectl_prints_a_volumes_warnings(kc: Kubectl) -> None:
    name = unique("recycled")
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Recycle", "nfs": {"server": "nfs.example", "path": "/exports"}}}
    try:
        result = kc("create", "-f", kc.write("pv.yaml", volume))
        assert result.stdout.strip() == f"persistentvolume/{name} created"
        assert result.stderr.strip() == ("Warning: spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is "
                                         "deprecated. Instead, the recommended approach is to use dynamic provisioning.")
    finally:
        kc("delete", "pv", name, "--wait=false", check=False)
