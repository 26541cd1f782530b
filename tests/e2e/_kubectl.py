"""Drive the real kubectl binary against the shared ``kubeloop up`` with a fresh HOME and cache per test.

A fresh ``HOME``/``KUBECACHEDIR`` means every test starts with empty discovery and OpenAPI caches,
as kubectl on a new machine would (apimachinery reference 1.2). ``Kubectl.api`` reads the stored
object straight from the API server, so a test can check what kubectl printed *and* what was stored.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import yaml


class Kubectl:
    def __init__(self, cluster: Any, home: Path) -> None:
        self.cluster = cluster
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        self.env.update(HOME=str(home), KUBECACHEDIR=str(home / "cache"), KUBECONFIG=str(cluster.kubeconfig))

    def __call__(self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 60,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["kubectl", *args], env={**self.env, **(env or {})}, input=stdin,
                                capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def write(self, name: str, *docs: dict[str, Any]) -> str:
        path = self.home / name
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return str(path)

    def api(self, path: str) -> dict[str, Any]:
        """The object as stored (GET through the API, no kubectl)."""
        with self.cluster.http() as http:
            r = http.get(path)
            assert r.status_code == 200, r.text
            return dict(r.json())

    def api_status(self, path: str) -> int:
        with self.cluster.http() as http:
            return int(http.get(path).status_code)

    def post(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cluster.http() as http:
            r = http.post(path, content=json.dumps(obj), headers={"content-type": "application/json"})
            assert r.status_code == 201, r.text
            return dict(r.json())


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def table(text: str) -> list[list[str]]:
    """kubectl's human table as rows of cells (columns split on runs of 2+ spaces)."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines() if line.strip()]


def eventually(check: Any, *, timeout: float = 20.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        time.sleep(interval)


def deployment(name: str, namespace: str, *, replicas: int = 1, image: str = "nginx:1.25") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "main", "image": image}]}}},
    }  # fmt: skip


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def crd(group: str, *, plural: str = "widgets", kind: str = "Widget", short: str = "wdg") -> dict[str, Any]:
    """A namespaced CRD with printer columns, a schema, status and scale subresources."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": [short]},
                 "versions": [{
                     "name": "v1", "served": True, "storage": True,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                              "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [
                         {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                         {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                         {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                         {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1}],
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "description": "What the widget should be.", "properties": {
                             "size": {"type": "string", "description": "How big the widget is."},
                             "replicas": {"type": "integer"},
                             "color": {"type": "string"}}},
                         "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
                 }]},
    }  # fmt: skip
