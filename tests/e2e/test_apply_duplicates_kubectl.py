"""kubectl against ``kubeloop up``: ``kubectl apply --server-side`` and keyed lists that repeat a key.

Upstream: apiserver ``managedfields/internal/structuredmerge.go`` refuses an applied configuration that
repeats a key (a 500 kubectl prints as ``Error from server: ...``); structured-merge-diff v4.4
(kubernetes/kubernetes #121575) lets a live object created with repeats be applied to: unrelated
changes keep the copies, applying the key conflicts with its owner and, forced, replaces the copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def deployment(name: str, namespace: str, env: list[dict[str, str]], **annotations: str) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"labels": {"app": name}},
                                "spec": {"containers": [{"name": "c", "image": "nginx", "env": env}]}}
    if annotations:
        template["metadata"]["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}}, "template": template}}


def test_kubectl_server_side_apply_refuses_a_repeated_env_name(kc: Kubectl, namespace: str) -> None:
    name = unique("dup")
    body = deployment(name, namespace, [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])
    result = kc("apply", "--server-side", "-f", kc.write("dup.yaml", body), check=False)
    assert result.returncode != 0
    assert (f"failed to create typed patch object ({namespace}/{name}; apps/v1, Kind=Deployment): "
            '.spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]') in result.stderr
    # A 500 without a reason (StatusReasonUnknown is ""): kubectl prints no reason in brackets.
    assert "Error from server: failed to create typed patch object" in result.stderr
    assert kc.api_status(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}") == 404


def test_kubectl_server_side_apply_to_an_object_created_with_repeats(kc: Kubectl, namespace: str) -> None:
    name = unique("dup")
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    repeated = [{"name": "A", "value": "1"}, {"name": "B", "value": "x"}, {"name": "A", "value": "2"}]
    kc("create", "-f", kc.write("create.yaml", deployment(name, namespace, repeated)))
    # Unrelated to A (B as it is, an annotation): the copies stay.
    kc("apply", "--server-side", "-f", kc.write("note.yaml", deployment(
        name, namespace, [{"name": "B", "value": "x"}], note="x")))
    assert kc.api(path)["spec"]["template"]["spec"]["containers"][0]["env"] == repeated
    applied = kc.write("a.yaml", deployment(name, namespace, [{"name": "A", "value": "3"}, {"name": "B", "value": "x"}]))
    result = kc("apply", "--server-side", "-f", applied, check=False)
    assert result.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1: '
            '.spec.template.spec.containers[name="c"].env[name="A"]') in result.stderr
    kc("apply", "--server-side", "--force-conflicts", "-f", applied)
    assert kc.api(path)["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "3"}, {"name": "B", "value": "x"}]
