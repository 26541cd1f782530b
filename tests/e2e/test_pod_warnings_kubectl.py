"""kubectl against ``kubeloop up`` prints the pod and pod template warnings as it prints a real cluster's:
one ``Warning: <text>`` line on stderr per ``Warning`` header, in the server's order.

Upstream (release 1.32): k/k ``pkg/api/pod/warnings.go`` through ``pkg/registry/core/pod/strategy.go``
(``WarningsOnCreate``) and ``pkg/registry/apps/deployment/strategy.go`` (``WarningsOnCreate``, and
``WarningsOnUpdate`` when the generation moved); kubectl's warning handler writes ``Warning: `` lines.
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


def test_kubectl_create_of_a_pod_prints_its_warnings(kc: Kubectl, namespace: str) -> None:
    name = unique("pod")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"nodeSelector": {"beta.kubernetes.io/os": "linux"},
                    "containers": [{"name": "c", "image": "nginx:1.25",
                                    "env": [{"name": "MODE", "value": "a"}, {"name": "MODE", "value": "b"}]}]}}
    result = kc("create", "-f", kc.write("pod.yaml", pod))
    assert result.stdout.strip() == f"pod/{name} created"
    assert result.stderr.splitlines() == [
        'Warning: spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead',
        'Warning: spec.containers[0].env[1]: hides previous definition of "MODE", which may be dropped when using apply',
    ]


def test_kubectl_apply_of_a_deployment_prints_its_template_warnings(kc: Kubectl, namespace: str) -> None:
    name = unique("web")

    def manifest(image: str) -> dict[str, Any]:
        volume = {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "conf"},
                                                                        {"key": "b", "path": "conf/app.yaml"}]}}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": {"volumes": [volume],
                                               "containers": [{"name": "c", "image": image,
                                                               "resources": {"limits": {"memory": "0.5"}}}]}}}}

    expected = [
        'Warning: volume "cfg" (ConfigMap "cfg"): overlapping paths: "conf/app.yaml" with "conf"',
        # No request defaulted from the limit: SetDefaults_Pod does that for pods, not templates.
        "Warning: spec.template.spec.containers[0].resources.limits[memory]: "
        'fractional byte value "500m" is invalid, must be an integer',
    ]
    created = kc("apply", "-f", kc.write("v1.yaml", manifest("nginx:1.25")))
    assert created.stdout.strip() == f"deployment.apps/{name} created"
    assert created.stderr.splitlines() == expected
    # The same manifest again: kubectl sends "0.5" over the stored "500m" (so "configured"), the spec
    # does not change, the generation stays, and the update says nothing.
    again = kc("apply", "-f", kc.write("v1.yaml", manifest("nginx:1.25")))
    assert (again.stdout.strip(), again.stderr) == (f"deployment.apps/{name} configured", "")
    assert kc.api(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")["metadata"]["generation"] == 1
    configured = kc("apply", "-f", kc.write("v2.yaml", manifest("nginx:1.26")))
    assert configured.stdout.strip() == f"deployment.apps/{name} configured"
    assert configured.stderr.splitlines() == expected
