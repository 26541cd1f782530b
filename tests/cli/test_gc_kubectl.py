"""Right after ``kubeloop up`` reports ready, its garbage collector collects through every kind of monitor.

The GC starts monitoring the built-in kinds before its first discovery answers (its own informers for
kinds no other controller watches, such as Secrets, and the manager's shared ones, such as Pods), and
``/readyz`` still answers 200 only after the GC's first discovery-driven sync (DESIGN: ready means
the controllers have synced). Real kubectl creates and deletes; nothing is waited for before the
first request but the ready line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
READY = re.compile(r"kubeloop is ready at (https://\S+)")


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    data = tmp_path / "up"
    proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if READY.search(line):
                break
        else:
            raise AssertionError("kubeloop up did not become ready:\n" + "".join(lines))
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        environ.update(HOME=str(tmp_path), KUBECONFIG=str(data / "kubeconfig"))
        yield environ
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", *args], input=stdin, env=env, capture_output=True, text=True, timeout=120,
                            check=False)  # fmt: skip
    assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def create(env: dict[str, str], obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = json.loads(kubectl(env, "create", "-o", "json", "-f", "-", stdin=json.dumps(obj)))
    return created


def test_dependents_of_an_own_and_a_shared_monitor_kind_are_collected_right_after_ready(
    env: dict[str, str],
) -> None:
    owner = create(env, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    create(env, {"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "child-secret", "namespace": "default", "ownerReferences": [ref]}})  # fmt: skip
    create(env, {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "child-pod", "namespace": "default", "ownerReferences": [ref]},
                 "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "nginx"}]}})  # fmt: skip
    kubectl(env, "delete", "configmap", "owner", "--wait=false")
    kubectl(env, "wait", "--for=delete", "secret/child-secret", "pod/child-pod", "--timeout=90s")
    remaining = kubectl(env, "get", "secrets,pods", "-o", "name", "--ignore-not-found")
    assert "child-secret" not in remaining and "child-pod" not in remaining
