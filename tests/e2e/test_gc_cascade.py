"""Cascading deletes with real kubectl against ``kubeloop up`` (its controller manager runs the garbage
collector and the namespace controller). Owner chains are made by hand with ownerReferences."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.slow

Kubectl = Callable[..., Any]


def create(kubectl: Kubectl, namespace: str, kind: str, name: str, *, owners: list[dict[str, Any]] | None = None,
           finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    obj = {"apiVersion": "v1", "kind": kind, "metadata": meta}
    result = kubectl("create", "-o", "json", "-f", "-", input_=json.dumps(obj))
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def ref(owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    r = {"apiVersion": "v1", "kind": owner["kind"], "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    if block:
        r["blockOwnerDeletion"] = True
    return r


def get(kubectl: Kubectl, namespace: str, what: str) -> dict[str, Any] | None:
    result = kubectl("get", what, "-n", namespace, "-o", "json", "--ignore-not-found", check=False)
    return json.loads(result.stdout) if result.stdout.strip() else None


def wait_until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


@pytest.fixture
def kubectl_in(kubectl_env: dict[str, str]) -> Kubectl:
    """``kubectl`` that also accepts ``input_=`` for stdin."""

    def run(*args: str, check: bool = True, input_: str | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", *args], env=kubectl_env, input=input_, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    return run


def test_kubectl_delete_cascades_in_the_background(kubectl_in: Kubectl, namespace: str) -> None:
    owner = create(kubectl_in, namespace, "ConfigMap", "web")
    middle = create(kubectl_in, namespace, "ConfigMap", "web-rs", owners=[ref(owner, block=True)])
    create(kubectl_in, namespace, "Secret", "web-pod", owners=[ref(middle, block=True)])

    kubectl_in("delete", "configmap", "web", "-n", namespace)

    wait_until(lambda: get(kubectl_in, namespace, "secret/web-pod") is None)
    assert get(kubectl_in, namespace, "configmap/web-rs") is None


def test_kubectl_cascade_orphan_keeps_dependents_without_the_reference(kubectl_in: Kubectl, namespace: str) -> None:
    owner = create(kubectl_in, namespace, "ConfigMap", "db")
    create(kubectl_in, namespace, "Secret", "db-0", owners=[ref(owner, block=True)])

    kubectl_in("delete", "configmap", "db", "-n", namespace, "--cascade=orphan")

    wait_until(lambda: "ownerReferences" not in (get(kubectl_in, namespace, "secret/db-0") or {"metadata": {}})["metadata"])
    assert get(kubectl_in, namespace, "configmap/db") is None
    assert get(kubectl_in, namespace, "secret/db-0") is not None


def test_kubectl_cascade_foreground_keeps_the_owner_until_blocking_dependents_go(kubectl_in: Kubectl, namespace: str) -> None:
    owner = create(kubectl_in, namespace, "ConfigMap", "app")
    create(kubectl_in, namespace, "Secret", "app-dep", owners=[ref(owner, block=True)], finalizers=["example.com/hold"])

    kubectl_in("delete", "configmap", "app", "-n", namespace, "--cascade=foreground", "--wait=false")

    wait_until(lambda: bool((get(kubectl_in, namespace, "secret/app-dep") or {}).get("metadata", {}).get("deletionTimestamp")))
    waiting = get(kubectl_in, namespace, "configmap/app")
    assert waiting is not None and waiting["metadata"]["deletionTimestamp"]
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

    kubectl_in("patch", "secret", "app-dep", "-n", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    wait_until(lambda: get(kubectl_in, namespace, "configmap/app") is None)


def test_kubectl_delete_namespace_lists_content_while_terminating_then_removes_all(kubectl_in: Kubectl, namespace: str) -> None:
    create(kubectl_in, namespace, "ConfigMap", "settings")
    create(kubectl_in, namespace, "Secret", "token")

    kubectl_in("delete", "namespace", namespace, "--wait=false")

    listed = kubectl_in("get", "configmaps,secrets", "-n", namespace, "-o", "name").stdout.split()
    assert "configmap/settings" in listed and "secret/token" in listed
    ns = json.loads(kubectl_in("get", "namespace", namespace, "-o", "json").stdout)
    assert ns["status"]["phase"] == "Terminating"

    def namespace_gone() -> bool:
        result = kubectl_in("get", "namespace", namespace, "--ignore-not-found", "-o", "name", check=False)
        return result.returncode == 0 and not result.stdout.strip()

    wait_until(namespace_gone, timeout=60)
