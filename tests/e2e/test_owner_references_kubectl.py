"""kubectl against ``kubeloop up``: duplicate ownerReferences are dropped with the warning kubectl prints,
and server-side apply refuses them.

Upstream: apiserver ``pkg/endpoints/handlers/rest.go`` ``dedupOwnerReferencesAndAddWarning`` (create.go,
update.go, patch.go); kubectl prints each ``Warning`` response header as ``Warning: <text>`` on stderr;
``managedfields`` ``structuredmerge.go`` refuses duplicates in an applied configuration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, configmap, unique

pytestmark = pytest.mark.slow
ADVICE = ("API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; "
          "please fix your requests; duplicate UID(s) observed: ")


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def owned(kc: Kubectl, namespace: str, name: str, times: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A live owner (so the garbage collector keeps the dependent) and a dependent naming it ``times`` times."""
    owner = kc.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap(unique("owner"), namespace))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    dependent = configmap(name, namespace, a="1")
    dependent["metadata"]["ownerReferences"] = [dict(ref) for _ in range(times)]
    return ref, dependent


def test_kubectl_create_prints_the_warning_and_one_reference_is_stored(kc: Kubectl, namespace: str) -> None:
    name = unique("dup")
    ref, dependent = owned(kc, namespace, name, 2)
    result = kc("create", "-f", kc.write("dup.yaml", dependent))
    assert result.stdout.strip() == f"configmap/{name} created"
    assert f"Warning: .metadata.ownerReferences contains duplicate entries; {ADVICE}{ref['uid']}" in result.stderr
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    assert stored["metadata"]["ownerReferences"] == [ref]


def test_kubectl_patch_adding_a_copy_prints_the_after_admission_warning(kc: Kubectl, namespace: str) -> None:
    name = unique("dup")
    ref, dependent = owned(kc, namespace, name, 1)
    kc("create", "-f", kc.write("one.yaml", dependent))
    patch = json.dumps([{"op": "add", "path": "/metadata/ownerReferences/-", "value": ref}])
    result = kc("patch", "configmap", name, "-n", namespace, "--type=json", "-p", patch)
    assert ("Warning: .metadata.ownerReferences contains duplicate entries after mutating admission happens; "
            f"{ADVICE}{ref['uid']}") in result.stderr
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")["metadata"]["ownerReferences"] == [ref]


def test_kubectl_server_side_apply_refuses_a_repeated_owner(kc: Kubectl, namespace: str) -> None:
    name = unique("dup")
    ref, dependent = owned(kc, namespace, name, 2)
    result = kc("apply", "--server-side", "-f", kc.write("dup.yaml", dependent), check=False)
    assert result.returncode != 0
    assert (f"failed to create typed patch object ({namespace}/{name}; /v1, Kind=ConfigMap): "
            f'.metadata.ownerReferences: duplicate entries for key [uid="{ref["uid"]}"]') in result.stderr
    assert kc.api_status(f"/api/v1/namespaces/{namespace}/configmaps/{name}") == 404
