"""kubectl and the ``kubernetes`` client against quotas and limit ranges, with the quota controller running.

``kubectl create quota`` (a protobuf body), a pod create refused with upstream's 403 messages
(apiserver admission/plugin/resourcequota, plugin/pkg/admission/limitranger), ``kubectl describe quota``
showing Used/Hard from the controller's status, and ``kubectl get limits``/``quota`` tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import SystemClock
from kubeloop.client import Client
from kubeloop.controllers import add_builtin_controllers
from kubeloop.runtime import Manager
from kubeloop.server import App
from kubeloop.testing import eventually, resource

from ._uvicorn import Kubectl, serve, write_kubeconfig

QUOTAS = resource("", "ResourceQuota")


@contextlib.asynccontextmanager
async def quota_controller(app: App) -> AsyncIterator[Client]:
    client = Client.from_asgi(app, clock=SystemClock())
    manager = Manager(client, clock=SystemClock(), graceful_shutdown_timeout=0)
    add_builtin_controllers(manager, names=["resourcequota"])
    task = asyncio.create_task(manager.run())
    try:
        yield client
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()


def pod_manifest(name: str, cpu: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [
        {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}).encode()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_create_quota_refused_pod_and_describe(real_app: App, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig)
    async with serve(real_app) as url, quota_controller(real_app) as admin:
        write_kubeconfig(kubeconfig, url)
        await kubectl.run("create", "quota", "q", "--hard=pods=2,requests.cpu=1")

        async def counted() -> bool:
            status = (await admin.get(QUOTAS, "q", namespace="default")).get("status") or {}
            return status.get("used") == {"pods": "0", "requests.cpu": "0"}

        await eventually(counted, interval=0.05, tries=600)
        code, _, err = await kubectl.run("run", "bare", "--image=nginx", ok=False)
        assert code == 1
        assert err.strip() == ('Error from server (Forbidden): pods "bare" is forbidden: failed quota: q: '
                               "must specify requests.cpu for: bare")
        await kubectl.run("create", "-f", "-", stdin=pod_manifest("a", "600m"))
        code, _, err = await kubectl.run("create", "-f", "-", stdin=pod_manifest("b", "600m"), ok=False)
        assert code == 1
        assert err.strip() == ('Error from server (Forbidden): error when creating "STDIN": pods "b" is forbidden: '
                               "exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=600m, "
                               "limited: requests.cpu=1")
        _, described, _ = await kubectl.run("describe", "quota", "q")
        rows = [line.split() for line in described.splitlines()]
        assert ["Resource", "Used", "Hard"] in rows
        assert ["pods", "1", "2"] in rows
        assert ["requests.cpu", "600m", "1"] in rows
        _, table, _ = await kubectl.run("get", "quota", "--no-headers")
        assert table.split()[0] == "q"
        assert "pods: 1/2, requests.cpu: 600m/1" in table


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_limit_range_defaults_and_refusal(real_app: App, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig)
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}}
    async with serve(real_app) as url:
        write_kubeconfig(kubeconfig, url)
        await kubectl.run("create", "-f", "-", stdin=json.dumps(limits).encode())
        _, table, _ = await kubectl.run("get", "limits")
        assert table.split()[:4] == ["NAME", "CREATED", "AT", "limits"]
        _, described, _ = await kubectl.run("describe", "limits", "limits")
        assert ["Container", "cpu", "-", "1", "100m", "500m", "-"] in [line.split() for line in described.splitlines()]
        await kubectl.run("run", "web", "--image=nginx")
        _, shown, _ = await kubectl.run("get", "pod", "web", "-o", "json")
        assert json.loads(shown)["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"},
                                                                          "requests": {"cpu": "100m"}}
        code, _, err = await kubectl.run("run", "big", "--image=nginx", "--overrides",
                                         json.dumps({"spec": {"containers": [{"name": "big", "image": "nginx",
                                                                              "resources": {"limits": {"cpu": "2"}}}]}}),
                                         ok=False)
        assert code == 1
        assert err.strip() == ('Error from server (Forbidden): pods "big" is forbidden: maximum cpu usage per Container '
                               "is 1, but limit is 2")


def _create_quota_and_pod(url: str) -> tuple[dict[str, object], ApiException]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        api = k8s.CoreV1Api(api_client)
        created = api.create_namespaced_resource_quota("default", {
            "metadata": {"name": "q"}, "spec": {"hard": {"count/configmaps": "0"}}})
        quota = api.read_namespaced_resource_quota("q", "default")
        quota.status = {"hard": {"count/configmaps": "0"}, "used": {"count/configmaps": "0"}}
        api.replace_namespaced_resource_quota_status("q", "default", quota)
        try:
            api.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
        except ApiException as error:
            return created.to_dict(), error
        raise AssertionError("the configmap was created past its quota")


async def test_the_kubernetes_client_reads_quotas_and_sees_the_403(real_app: App) -> None:
    async with serve(real_app) as url:
        created, error = await asyncio.to_thread(_create_quota_and_pod, url)
    assert created["status"] == {"hard": None, "used": None}
    assert error.status == 403
    assert json.loads(error.body)["message"] == (
        'configmaps "cm" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=0, '
        "limited: count/configmaps=0")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_deleted_deployment_frees_its_object_count_at_once(real_app: App, tmp_path: Path) -> None:
    """``count/deployments.apps``: upstream's QuotaMonitor watches every quotable resource
    (``resource_quota_monitor.go``), so a deleted Deployment replenishes the quota without the 5-minute
    recount, and kubectl can create one again."""
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig)
    async with serve(real_app) as url, quota_controller(real_app) as admin:
        write_kubeconfig(kubeconfig, url)
        await kubectl.run("create", "quota", "q", "--hard=count/deployments.apps=1")

        def used_becomes(value: str) -> Any:
            async def check() -> bool:
                status = (await admin.get(QUOTAS, "q", namespace="default")).get("status") or {}
                return status.get("used") == {"count/deployments.apps": value}
            return check

        await eventually(used_becomes("0"), interval=0.05, tries=600)
        await kubectl.run("create", "deployment", "web", "--image=nginx")
        code, _, err = await kubectl.run("create", "deployment", "api", "--image=nginx", ok=False)
        assert code == 1
        assert err.strip() == ('error: failed to create deployment: deployments.apps "api" is forbidden: exceeded '
                               "quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, "
                               "limited: count/deployments.apps=1")
        await kubectl.run("delete", "deployment", "web")
        await eventually(used_becomes("0"), interval=0.05, tries=600)
        await kubectl.run("create", "deployment", "api", "--image=nginx")
