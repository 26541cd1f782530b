"""kubectl's typed-client commands against ``kubeloop up`` (issue 3 point 6): they send protobuf
request bodies (``application/vnd.kubernetes.protobuf``), which the server decodes and answers in
JSON. ``create <generator>``, ``auth can-i`` (exit codes 0/1) and ``auth whoami``; each test asserts
on kubectl's output and on the stored object, with a fresh kubectl HOME and cache.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, table, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def _manager(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["managedFields"][0]["manager"])


def test_create_namespace(kc: Kubectl) -> None:
    name = unique("gen-ns")
    assert kc("create", "namespace", name).stdout.strip() == f"namespace/{name} created"
    stored = kc.api(f"/api/v1/namespaces/{name}")
    assert stored["status"]["phase"] == "Active" and _manager(stored) == "kubectl-create"


def test_create_configmap_from_literals(kc: Kubectl, namespace: str) -> None:
    out = kc("create", "configmap", "gen", "-n", namespace, "--from-literal=a=1", "--from-literal=b=two").stdout
    assert out.strip() == "configmap/gen created"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/gen")
    assert stored["data"] == {"a": "1", "b": "two"} and _manager(stored) == "kubectl-create"


def test_create_secret_generic(kc: Kubectl, namespace: str) -> None:
    out = kc("create", "secret", "generic", "gen", "-n", namespace, "--from-literal=password=s3cret").stdout
    assert out.strip() == "secret/gen created"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/secrets/gen")
    assert stored["type"] == "Opaque"
    assert base64.b64decode(stored["data"]["password"]) == b"s3cret"


def test_create_serviceaccount(kc: Kubectl, namespace: str) -> None:
    assert kc("create", "serviceaccount", "robot", "-n", namespace).stdout.strip() == "serviceaccount/robot created"
    assert kc.api(f"/api/v1/namespaces/{namespace}/serviceaccounts/robot")["metadata"]["name"] == "robot"


def test_create_deployment(kc: Kubectl, namespace: str) -> None:
    out = kc("create", "deployment", "gen", "-n", namespace, "--image=nginx:1.25", "--replicas=0", "--port=80").stdout
    assert out.strip() == "deployment.apps/gen created"
    stored = kc.api(f"/apis/apps/v1/namespaces/{namespace}/deployments/gen")
    assert stored["spec"]["replicas"] == 0  # an explicit zero survives the protobuf decoding
    (container,) = stored["spec"]["template"]["spec"]["containers"]
    assert (container["name"], container["image"], container["ports"]) == ("nginx", "nginx:1.25", [{"containerPort": 80, "protocol": "TCP"}])
    assert stored["spec"]["selector"] == {"matchLabels": {"app": "gen"}}


def test_create_generator_dry_run_server_stores_nothing(kc: Kubectl, namespace: str) -> None:
    out = kc("create", "configmap", "dry", "-n", namespace, "--from-literal=a=1", "--dry-run=server").stdout
    assert out.strip() == "configmap/dry created (server dry run)"
    assert kc.api_status(f"/api/v1/namespaces/{namespace}/configmaps/dry") == 404


def test_auth_can_i_answers_yes_and_no_with_exit_codes(kc: Kubectl, namespace: str) -> None:
    yes = kc("auth", "can-i", "create", "configmaps", "-n", namespace)
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
    no = kc("auth", "can-i", "delete", "nodes", "--as=nobody", check=False)
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    sub = kc("auth", "can-i", "get", "pods", "--subresource=log", "-n", namespace)
    assert sub.stdout.strip() == "yes"


def test_auth_whoami_prints_the_user(kc: Kubectl) -> None:
    rows = table(kc("auth", "whoami").stdout)
    assert rows[0] == ["ATTRIBUTE", "VALUE"]
    fields = {r[0]: r[1] for r in rows[1:]}
    assert fields["Username"] == "kubernetes-admin"
    assert "system:masters" in fields["Groups"]
    impersonated = {r[0]: r[1] for r in table(kc("auth", "whoami", "--as=ann", "--as-group=devs").stdout)[1:]}
    assert impersonated["Username"] == "ann" and "devs" in impersonated["Groups"]
