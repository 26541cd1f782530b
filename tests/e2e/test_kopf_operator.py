"""A small kopf operator, run with ``kopf run --standalone``, reacts to ConfigMaps on ``kubeloop up``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

OPERATOR = '''
import kopf


@kopf.on.create("", "v1", "configmaps", labels={"kubeloop-test": "parent"})
def make_child(name, namespace, body, **_):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-child", "namespace": namespace},
        "data": {"copied": body.get("data", {}).get("value", "")},
    }
    kopf.adopt(child)
    import kubernetes

    kubernetes.config.load_kube_config()
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, child)
    return {"child": child["metadata"]["name"]}
'''


def test_kopf_operator_creates_an_owned_child_for_a_configmap(
    cluster: Any, namespace: str, kubectl_env: dict[str, str], tmp_path: Path
) -> None:
    operator = tmp_path / "operator.py"
    operator.write_text(OPERATOR)
    log = (tmp_path / "kopf.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", namespace, str(operator)],
        env=kubectl_env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        with cluster.http() as http:
            parent = http.post(
                f"/api/v1/namespaces/{namespace}/configmaps",
                json={"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "p", "labels": {"kubeloop-test": "parent"}}, "data": {"value": "42"}},
            ).json()  # fmt: skip
            deadline = time.monotonic() + 60
            child = http.get(f"/api/v1/namespaces/{namespace}/configmaps/p-child")
            while child.status_code == 404 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
                child = http.get(f"/api/v1/namespaces/{namespace}/configmaps/p-child")
            assert child.status_code == 200, (tmp_path / "kopf.log").read_text()
            assert child.json()["data"] == {"copied": "42"}
            (owner,) = child.json()["metadata"]["ownerReferences"]
            assert owner["uid"] == parent["metadata"]["uid"] and owner["controller"] is True
            # kopf marks the parent as handled (an annotation with the last handled spec), once done.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                meta = http.get(f"/api/v1/namespaces/{namespace}/configmaps/p").json()["metadata"]
                if "kopf.zalando.org/last-handled-configuration" in (meta.get("annotations") or {}):
                    break
                time.sleep(0.2)
            else:
                raise AssertionError("kopf never marked the parent handled:\n" + (tmp_path / "kopf.log").read_text())
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
