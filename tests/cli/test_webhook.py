"""``kubeloop webhook``: AdmissionReview v1 posted over real HTTPS to the served webhook."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubeloop.cli", "webhook", "--port", "0", "--address", "127.0.0.1",
         "--cert-dir", str(tmp_path / "certs")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kubeloop webhook is serving at https://127.0.0.1:"), line
        yield line.split()[-1], tmp_path / "certs" / "pki" / "ca.crt"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def review(old: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "operation": "DELETE", "name": "team-a-prod",
        "kind": {"group": "", "version": "v1", "kind": "Namespace"},
        "resource": {"group": "", "version": "v1", "resource": "namespaces"},
        "userInfo": {"username": "alice"}, "oldObject": old,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}}}


def test_served_webhook_denies_a_protected_delete_over_tls(webhook: tuple[str, Path]) -> None:
    url, ca = webhook
    old = {"metadata": {"name": "team-a-prod", "uid": "u-1", "annotations": {"kubeloop.dev/protect": "true"}}}
    with httpx.Client(verify=ssl.create_default_context(cafile=str(ca))) as http:
        answer = http.post(url, json=review(old)).json()
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert "kubeloop delete namespace/team-a-prod" in response["status"]["message"]


def test_served_webhook_allows_an_approved_delete_and_rejects_garbage(webhook: tuple[str, Path]) -> None:
    url, ca = webhook
    old = {"metadata": {"name": "team-a-prod", "uid": "u-1", "annotations": {
        "kubeloop.dev/protect": "true", "kubeloop.dev/delete-approved": "0123456789abcdef/u-1"}}}
    with httpx.Client(verify=ssl.create_default_context(cafile=str(ca))) as http:
        assert http.post(url, json=review(old)).json()["response"]["allowed"] is True
        assert http.post(url, content=b"not json").status_code == 400
        assert http.get(url.replace("/validate", "/healthz")).status_code == 200


def test_print_config_names_the_url_and_the_ca_bundle(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubeloop.cli", "webhook", "--cert-dir", str(tmp_path), "--print-config",
         "https://guard.example:9443/validate"], capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    config = json.loads(result.stdout)
    hook = config["webhooks"][0]
    assert config["kind"] == "ValidatingWebhookConfiguration"
    assert hook["clientConfig"]["url"] == "https://guard.example:9443/validate"
    assert hook["clientConfig"]["caBundle"] and hook["rules"][0]["operations"] == ["DELETE"]


def test_webhook_on_a_busy_port_fails_with_a_one_line_reason_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "kubeloop.cli", "webhook", "--port", str(port), "--address", "127.0.0.1",
             "--cert-dir", str(tmp_path / "certs")], capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in errors[0]
