"""kubectl against ``kubeloop up``: an invalid Deployment is refused with upstream's causes, and its
selector may not change.

Upstream (release 1.32): k/k ``pkg/apis/apps/validation/validation.go`` ``ValidateDeploymentSpec`` and
``ValidatePodTemplateSpecForReplicaSet``; ``pkg/registry/apps/deployment/strategy.go`` ``ValidateUpdate``
(the selector is immutable in apps/v1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def deployment(name: str, namespace: str, *, selector: dict[str, str], labels: dict[str, str],
               replicas: int = 0) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}


def test_kubectl_apply_of_an_invalid_deployment_prints_upstreams_two_causes(kc: Kubectl, namespace: str) -> None:
    name = unique("bad")
    body = deployment(name, namespace, replicas=-1, selector={"app": "x"}, labels={"app": "y"})
    path = kc.home / "deploy.json"  # JSON: in YAML 1.1, which kubectl reads, a bare y is true
    path.write_text(json.dumps(body))
    result = kc("apply", "-f", str(path), check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f'The Deployment "{name}" is invalid: ',
        "* spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        '* spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: '
        "`selector` does not match template `labels`",
    ]
    assert kc.api_status(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}") == 404


def test_kubectl_apply_may_not_change_a_deployments_selector(kc: Kubectl, namespace: str) -> None:
    name = unique("web")
    created = kc("apply", "-f", kc.write("deploy.yaml", deployment(name, namespace, selector={"app": name},
                                                                     labels={"app": name})))
    assert created.stdout.strip() == f"deployment.apps/{name} created"
    changed = deployment(name, namespace, selector={"app": name, "tier": "web"}, labels={"app": name, "tier": "web"})
    result = kc("apply", "-f", kc.write("changed.yaml", changed), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'The Deployment "{name}" is invalid: spec.selector: Invalid value: v1.LabelSelector{{MatchLabels:'
        f'map[string]string{{"app":"{name}", "tier":"web"}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}: '
        "field is immutable")
    stored = kc.api(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    assert stored["spec"]["selector"] == {"matchLabels": {"app": name}}
