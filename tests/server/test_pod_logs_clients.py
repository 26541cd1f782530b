"""kubectl 1.32 and the ``kubernetes`` package against the log and exec subresources, served the way
``kubeloop apiserver`` serves (kubeloop's uvicorn protocol, over TLS)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.cli._cluster import _bind, _uvicorn_server
from kubeloop.server import App, TlsMaterial, ensure_tls

from ._kubelet_fixtures import PODS, node, pod, running, set_status, waiting
from ._uvicorn import Kubectl, write_kubeconfig

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


class FollowSeen:
    """Wraps the app: ``opened`` is set once a ``follow`` log response has started (its watch is from the
    revision it read, so any later change reaches it)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.opened = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        follow = scope["type"] == "http" and scope["path"].endswith("/log") and b"follow=true" in scope["query_string"]

        async def watched(message: Any) -> None:
            await send(message)
            if follow and message["type"] == "http.response.start" and message["status"] == 200:
                self.opened.set()

        await self.app(scope, receive, watched if follow else send)


@contextlib.asynccontextmanager
async def served(app: Any, tls: TlsMaterial) -> AsyncIterator[str]:
    sock = _bind("127.0.0.1", 0)
    server = _uvicorn_server(app, tls.cert, tls.key)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.005)
        yield f"https://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@dataclasses.dataclass
class Cluster:
    kubectl: Kubectl
    admin: httpx.AsyncClient
    seen: FollowSeen
    url: str
    ca: str


@contextlib.asynccontextmanager
async def cluster(real_app: App, tmp_path: Path) -> AsyncIterator[Cluster]:
    """A node, and pod web-1 (labels app=web) on it: container app running, side still being created."""
    tls = ensure_tls(tmp_path / "data")
    await real_app.startup()
    seen = FollowSeen(real_app)
    async with served(seen, tls) as url:
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, url, ca_pem=tls.ca_pem)
        async with httpx.AsyncClient(base_url=url, verify=ssl.create_default_context(cafile=str(tls.ca_cert))) as admin:
            await node(admin)
            await pod(admin, "web-1", containers=("app", "side"), labels={"app": "web"})
            await set_status(admin, "web-1", running("app", "kubeloop://1"), waiting("side", "ContainerCreating"))
            yield Cluster(Kubectl(kubeconfig), admin, seen, url, str(tls.ca_cert))
    await real_app.shutdown()


@needs_kubectl
async def test_kubectl_logs_of_a_pod_a_deployment_a_container_and_a_previous_run(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:
        kubectl, admin = c.kubectl, c.admin
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                      "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                          "metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}
        r = await admin.post("/apis/apps/v1/namespaces/default/deployments", json=deployment)
        assert r.status_code == 201, r.text
        # The default container is kubectl's choice (it says so on stderr); the log is empty.
        code, out, err = await kubectl.run("logs", "pod/web-1")
        assert (code, out) == (0, "") and 'Defaulted container "app" out of: app, side' in err
        code, out, _ = await kubectl.run("logs", "deploy/web", "-c", "app", "--timestamps", "--tail=20")
        assert (code, out) == (0, "")
        code, _, err = await kubectl.run("logs", "web-1", "-c", "side", ok=False)
        assert code == 1 and err.strip() == (
            'Error from server (BadRequest): container "side" in pod "web-1" is waiting to start: ContainerCreating')
        code, _, err = await kubectl.run("logs", "web-1", "-c", "app", "--previous", ok=False)
        assert code == 1 and err.strip() == (
            'Error from server (BadRequest): previous terminated container "app" in pod "web-1" not found')
        code, _, err = await kubectl.run("logs", "web-1", "-c", "nope", ok=False)
        assert code == 1 and "container nope is not valid for pod web-1" in err


@needs_kubectl
async def test_kubectl_logs_follow_ends_when_the_pod_is_deleted(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:
        kubectl, admin, seen = c.kubectl, c.admin, c.seen
        following = asyncio.create_task(kubectl.run("logs", "-f", "pod/web-1", "-c", "app"))
        await seen.opened.wait()
        assert not following.done()
        r = await admin.delete(f"{PODS}/web-1", params={"gracePeriodSeconds": "0"})
        assert r.status_code == 200
        code, out, _ = await following
        assert (code, out) == (0, "")


@needs_kubectl
async def test_kubectl_exec_fails_with_the_clear_message(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:
        kubectl = c.kubectl
        # kubectl 1.32 tries a WebSocket upgrade (GET), then SPDY (POST): both get the Status.
        code, _, err = await kubectl.run("exec", "web-1", "-c", "app", "--", "ls", ok=False)
        assert code == 1 and err.strip() == (
            "Error from server (BadRequest): kubeloop's simulated kubelet cannot exec in container \"app\" of pod "
            '"web-1": simulated containers run no process')
        code, _, err = await kubectl.run("exec", "web-1", "-c", "nope", "--", "ls", ok=False)
        # kubectl leaves an unknown container to the server: its validateContainer answer.
        assert code == 1 and err.strip() == "Error from server (BadRequest): container nope is not valid for pod web-1"


async def test_the_kubernetes_package_reads_a_pod_log(real_app: App, tmp_path: Path) -> None:
    async with cluster(real_app, tmp_path) as c:

        def read() -> tuple[str, int, str]:
            configuration = k8s.Configuration(host=c.url)
            configuration.ssl_ca_cert = c.ca
            with k8s.ApiClient(configuration) as api_client:
                core = k8s.CoreV1Api(api_client)
                text = core.read_namespaced_pod_log("web-1", "default", container="app", tail_lines=5)
                try:
                    core.read_namespaced_pod_log("web-1", "default", container="side")
                except ApiException as error:
                    return text, int(error.status), json.loads(error.body)["message"]
                return text, 0, ""

        assert await asyncio.to_thread(read) == (
            "", 400, 'container "side" in pod "web-1" is waiting to start: ContainerCreating')
