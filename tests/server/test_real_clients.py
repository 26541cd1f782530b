"""The official ``kubernetes`` client and ``lightkube`` work unchanged against a uvicorn-served app."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap

from kubeloop.server import App

from ._uvicorn import serve


def _kubernetes_flow(url: str) -> dict[str, Any]:
    configuration = k8s.Configuration(host=url)
    with k8s.ApiClient(configuration) as api_client:
        core = k8s.CoreV1Api(api_client)
        apps = k8s.AppsV1Api(api_client)
        out: dict[str, Any] = {}
        body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm", labels={"app": "x"}), data={"a": "1"})
        created = core.create_namespaced_config_map("default", body)
        out["created_rv"] = created.metadata.resource_version
        out["read"] = core.read_namespaced_config_map("cm", "default").data
        out["listed"] = [i.metadata.name for i in core.list_namespaced_config_map("default", label_selector="app=x").items]
        core.patch_namespaced_config_map("cm", "default", {"data": {"b": "2"}})
        stale = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm", resource_version=out["created_rv"]), data={})
        try:
            core.replace_namespaced_config_map("cm", "default", stale)
        except ApiException as exc:
            out["conflict"] = exc.status
        events = [
            (e["type"], e["object"].metadata.name)
            for e in k8s_watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=1)
        ]
        out["watch"] = events
        deployment = k8s.V1Deployment(
            metadata=k8s.V1ObjectMeta(name="d"),
            spec=k8s.V1DeploymentSpec(
                selector=k8s.V1LabelSelector(match_labels={"app": "d"}),
                template=k8s.V1PodTemplateSpec(
                    metadata=k8s.V1ObjectMeta(labels={"app": "d"}),
                    spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx:1")]))))
        apps.create_namespaced_deployment("default", deployment)
        apps.patch_namespaced_deployment_scale("d", "default", {"spec": {"replicas": 4}})
        out["replicas"] = apps.read_namespaced_deployment("d", "default").spec.replicas
        status = core.delete_namespaced_config_map("cm", "default", propagation_policy="Foreground")
        out["deleted_finalizers"] = status.metadata.finalizers if hasattr(status, "metadata") else None
        try:
            core.read_namespaced_config_map("ghost", "default")
        except ApiException as exc:
            out["missing"] = exc.status
        return out


async def test_official_kubernetes_client(real_app: App) -> None:
    async with serve(real_app) as url:
        out = await asyncio.to_thread(_kubernetes_flow, url)
    assert out["read"] == {"a": "1"}
    assert out["listed"] == ["cm"]
    assert out["conflict"] == 409
    assert out["watch"] == [("ADDED", "cm")]
    assert out["replicas"] == 4
    assert out["missing"] == 404


async def test_lightkube_async_client(real_app: App) -> None:
    async with serve(real_app) as url:
        config = KubeConfig.from_dict({
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
            "current-context": "x",
        })
        client = AsyncClient(config, namespace="default", field_manager="lk")
        try:
            created = await client.create(ConfigMap(metadata=ObjectMeta(name="lk"), data={"a": "1"}))
            assert created.metadata is not None and created.metadata.resourceVersion
            got = await client.get(ConfigMap, "lk")
            assert got.data == {"a": "1"}
            names = [cm.metadata.name async for cm in client.list(ConfigMap, labels={}) if cm.metadata]
            assert names == ["lk"]
            got.data = {"a": "2"}
            assert got.metadata is not None
            got.metadata.resourceVersion = None  # lightkube replace may omit it: unconditional update
            replaced = await client.replace(got)
            assert replaced.data == {"a": "2"}
            applied = await client.apply(ConfigMap(metadata=ObjectMeta(name="lk"), data={"a": "3"}), force=True)
            assert applied.data == {"a": "3"}
            seen: list[tuple[str, str]] = []
            async for kind, obj in client.watch(ConfigMap, server_timeout=1):
                seen.append((kind, obj.metadata.name if obj.metadata else ""))
                break
            assert seen == [("ADDED", "lk")]
            await client.delete(ConfigMap, "lk")
            with pytest.raises(Exception) as info:
                await client.get(ConfigMap, "lk")
            assert getattr(getattr(info.value, "status", None), "code", None) == 404
        finally:
            await client.close()
