"""``kubectl create pdb`` against ``kubeloop up``: kubectl sends the policy/v1 PodDisruptionBudget as a
protobuf body (``application/vnd.kubernetes.protobuf``), which the server decodes like JSON. Each test
checks kubectl's own ``-v=8`` log, so it fails if the body stops being protobuf. (``kubectl drain``
1.32 posts its Evictions as JSON; ``tests/e2e/test_kubelet_kubectl.py`` drives it.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl

pytestmark = pytest.mark.slow

PROTOBUF = "application/vnd.kubernetes.protobuf"


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def _sent_protobuf(log: str, method: str, suffix: str) -> bool:
    """Whether kubectl's -v=8 log shows a ``method`` request to a URL ending in ``suffix`` with a protobuf body."""
    lines = log.splitlines()
    for index, line in enumerate(lines):
        if f"{method} https://" in line and suffix in line.split("?")[0]:
            window = "\n".join(lines[max(0, index - 12):index + 12])
            if f"Content-Type: {PROTOBUF}" in window:
                return True
    return False


def test_create_pdb_with_min_available(kc: Kubectl, namespace: str) -> None:
    result = kc("create", "pdb", "web", "-n", namespace, "--selector=app=web", "--min-available=2", "-v=8")
    assert result.stdout.strip() == "poddisruptionbudget.policy/web created"
    assert _sent_protobuf(result.stderr, "POST", f"/namespaces/{namespace}/poddisruptionbudgets")
    stored = kc.api(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    assert stored["spec"] == {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}
    assert stored["metadata"]["managedFields"][0]["manager"] == "kubectl-create"


def test_create_pdb_with_max_unavailable_percent(kc: Kubectl, namespace: str) -> None:
    kc("create", "pdb", "api", "-n", namespace, "--selector=tier=api,env in (a,b)", "--max-unavailable=50%")
    spec = kc.api(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/api")["spec"]
    assert spec["maxUnavailable"] == "50%" and "minAvailable" not in spec
    assert spec["selector"] == {"matchLabels": {"tier": "api"},
                                "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}

