"""``kubeloop up`` as a real subprocess, and real clients (kubectl, kubernetes, lightkube, kopf) against it.

:class:`KubeloopProcess` starts ``python -m kubeloop.cli up --port 0 --data-dir DIR``, reads the URL it
prints, waits for ``/readyz`` 200 and always terminates it. The session-scoped ``cluster`` fixture is
shared by the e2e tests (each test works in its own namespace); tests that stop or kill the server
start their own process.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

READY = re.compile(r"kubeloop is ready at (https://\S+)")


class KubeloopProcess:
    def __init__(self, data_dir: Path, *args: str) -> None:
        self.data_dir = data_dir
        self.output: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()
        self.url = ""

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def wait_ready(self, timeout: float = 60) -> KubeloopProcess:
        deadline = time.monotonic() + timeout
        while not self.url:
            try:
                line = self._lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"kubeloop up not ready in {timeout}s:\n" + "\n".join(self.output)) from None
            if line is None:
                self.proc.wait()
                raise AssertionError(f"kubeloop up exited {self.proc.returncode}:\n" + "\n".join(self.output))
            match = READY.search(line)
            if match:
                self.url = match.group(1)
        with self.http(token=None) as http:
            while http.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "\n".join(self.output)
                time.sleep(0.02)
        return self

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    @property
    def token(self) -> str:
        doc = yaml.safe_load(self.kubeconfig.read_text())
        return str(doc["users"][0]["user"]["token"])

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def http(self, *, token: str | object | None = ..., timeout: float = 30) -> httpx.Client:
        headers = {}
        bearer = self.token if token is ... else token
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        return httpx.Client(base_url=self.url, verify=self.ssl_context(), headers=headers, timeout=timeout)

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("kubeloop up did not stop on SIGTERM:\n" + "\n".join(self.output)) from None
        self._close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self) -> None:
        # The pump ends at EOF, once the server and its controller manager (which shares stdout) exit.
        self._pump_thread.join(timeout=30)
        if self.proc.stdout is not None and not self._pump_thread.is_alive():
            self.proc.stdout.close()


@pytest.fixture
def start_kubeloop(tmp_path: Path) -> Iterator[Any]:
    """Start (and always stop) private ``kubeloop up`` processes: ``start_kubeloop(data_dir, *args)``."""
    started: list[KubeloopProcess] = []

    def start(data_dir: Path | None = None, *args: str) -> KubeloopProcess:
        process = KubeloopProcess(data_dir or tmp_path / "data", *args)
        started.append(process)
        return process.wait_ready()

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeloopProcess]:
    process = KubeloopProcess(tmp_path_factory.mktemp("cluster"))
    try:
        yield process.wait_ready()
    finally:
        process.stop()
        process.kill()


@pytest.fixture
def namespace(cluster: KubeloopProcess) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    with cluster.http() as http:
        r = http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert r.status_code == 201, r.text
        # As upstream's e2e framework does (CreateTestingNS, then waiting for the default ServiceAccount
        # and the kube-root-ca.crt ConfigMap): the controllers fill a new namespace within moments.
        for path in (f"/api/v1/namespaces/{name}/serviceaccounts/default",
                     f"/api/v1/namespaces/{name}/configmaps/kube-root-ca.crt"):
            for _ in range(1200):
                if http.get(path).status_code == 200:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"{path} did not appear")
    yield name


@pytest.fixture(scope="session")
def kubectl_env(tmp_path_factory: pytest.TempPathFactory, cluster: KubeloopProcess) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home), KUBECACHEDIR=str(home / "cache"), KUBECONFIG=str(cluster.kubeconfig))
    return env


@pytest.fixture
def kubectl(kubectl_env: dict[str, str]) -> Any:
    def run(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", *args], env=kubectl_env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    return run
