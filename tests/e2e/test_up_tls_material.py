"""``kubeloop up``'s TLS material as real clients see it, on a first start and on a restart.

On a first start a child forked by ``kubeloop up`` makes the certificates with ``cryptography``
(``cli/_tls_child.py``, ``_tls.py``) and the API server loads the PEM files; on a restart the server loads
the stored files with ``ssl`` alone. Both must still be what kubectl (Go's ``crypto/x509``, a strict
parser) and the official ``kubernetes`` client (Python's ``ssl``) verify, through the kubeconfig the
first start wrote; and the server must not have loaded ``cryptography`` at all, on either start (its
native module would be mapped into the process).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes


def _kubectl_namespaces(kubeconfig: Path, home: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home), KUBECACHEDIR=str(home / "cache"), KUBECONFIG=str(kubeconfig))
    result = subprocess.run(
        ["kubectl", "get", "namespaces", "-o", "name"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def _client_namespaces(kubeconfig: Path) -> list[str]:
    api = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    try:
        return [ns.metadata.name for ns in kubernetes.client.CoreV1Api(api).list_namespace().items]
    finally:
        api.close()


def _maps_cryptography(pid: int) -> bool:
    return "/cryptography/" in Path(f"/proc/{pid}/maps").read_text()


def test_kubectl_and_the_kubernetes_client_verify_the_server_on_a_first_start_and_after_a_restart(
    start_kubeloop: Any, tmp_path: Path
) -> None:
    data_dir = tmp_path / "d"
    first: Any = start_kubeloop(data_dir, "--no-controllers")
    pki = data_dir / "pki"
    for name in ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key"):
        assert (pki / name).stat().st_size > 0, name
    ca_pem = (pki / "ca.crt").read_bytes()
    assert "namespace/kube-system" in _kubectl_namespaces(first.kubeconfig, tmp_path / "home1")
    assert "kube-system" in _client_namespaces(first.kubeconfig)
    assert not _maps_cryptography(first.proc.pid)  # its TLS child made the keys, with cryptography
    assert first.stop() == 0

    second: Any = start_kubeloop(data_dir, "--no-controllers")
    assert (pki / "ca.crt").read_bytes() == ca_pem
    assert "namespace/kube-system" in _kubectl_namespaces(second.kubeconfig, tmp_path / "home2")
    assert "kube-system" in _client_namespaces(second.kubeconfig)
    assert not _maps_cryptography(second.proc.pid)
