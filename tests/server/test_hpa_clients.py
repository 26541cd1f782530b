"""Real clients on HorizontalPodAutoscalers: ``kubectl autoscale`` (an autoscaling/v1 object sent as protobuf),
``kubectl get hpa`` (printHorizontalPodAutoscaler's columns), ``kubectl describe hpa`` and ``kubectl explain``,
and the official ``kubernetes`` package's AutoscalingV2Api and AutoscalingV1Api on the same object."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kubeloop.client import Client
from kubeloop.controllers._hpa import HorizontalPodAutoscalerController
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._workload_kinds import DEPLOYMENTS
from kubeloop.runtime import Manager
from kubeloop.server import App
from kubeloop.testing import FakeClock, eventually

from ._uvicorn import kubectl_for, serve

EVENTS = builtin("", "events")
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


@needs_kubectl
async def test_kubectl_autoscale_then_get_and_describe_hpa(real_app: App, tmp_path: Path) -> None:
    async with kubectl_for(real_app, tmp_path) as kubectl:
        await kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
        made = await kubectl("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80")
        table = await kubectl("get", "hpa")
        v2 = json.loads(await kubectl("get", "hpa", "web", "-o", "json"))
        v1 = json.loads(await kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json"))
        described = await kubectl("describe", "hpa", "web")
        explained = await kubectl("explain", "hpa.spec.behavior.scaleUp")
        explained_v1 = await kubectl("explain", "hpa.spec", "--api-version=autoscaling/v1")
        in_all = await kubectl("get", "all")
    assert made.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    header, row = table.splitlines()
    assert header.split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row.split()[:7] == ["web", "Deployment/web", "cpu:", "<unknown>/80%", "2", "5", "0"]
    assert (v2["apiVersion"], v2["spec"]["minReplicas"], v2["spec"]["maxReplicas"]) == ("autoscaling/v2", 2, 5)
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert v2["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (v1["apiVersion"], v1["spec"]["targetCPUUtilizationPercentage"]) == ("autoscaling/v1", 80)
    assert "Reference:" in described and "Deployment/web" in described
    assert "Min replicas:" in described and "Max replicas:" in described
    assert "Deployment pods:" in described and "0 current / 0 desired" in described
    assert "resource cpu on pods  (as a percentage of request):  <unknown> / 80%" in described
    assert "VERSION:    v2" in explained and "FIELD: scaleUp <HPAScalingRules>" in explained
    assert "stabilizationWindowSeconds\t<integer>" in explained
    assert "VERSION:    v1" in explained_v1 and "targetCPUUtilizationPercentage\t<integer>" in explained_v1
    assert "horizontalpodautoscaler.autoscaling/web" in in_all


def _with_kubernetes_client(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        v2 = k8s.AutoscalingV2Api(api_client)
        v1 = k8s.AutoscalingV1Api(api_client)
        v2.create_namespaced_horizontal_pod_autoscaler("default", k8s.V2HorizontalPodAutoscaler(
            metadata=k8s.V1ObjectMeta(name="api"),
            spec=k8s.V2HorizontalPodAutoscalerSpec(
                scale_target_ref=k8s.V2CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web"),
                max_replicas=4,
                metrics=[k8s.V2MetricSpec(type="Resource", resource=k8s.V2ResourceMetricSource(
                    name="memory", target=k8s.V2MetricTarget(type="Utilization", average_utilization=70)))])))
        read_v1 = v1.read_namespaced_horizontal_pod_autoscaler("api", "default")
        read_v1.spec.target_cpu_utilization_percentage = 55
        v1.replace_namespaced_horizontal_pod_autoscaler("api", "default", read_v1)
        read_v2 = v2.read_namespaced_horizontal_pod_autoscaler("api", "default")
        listed = v1.list_namespaced_horizontal_pod_autoscaler("default")
        try:
            v1.create_namespaced_horizontal_pod_autoscaler("default", k8s.V1HorizontalPodAutoscaler(
                metadata=k8s.V1ObjectMeta(name="bad"), spec=k8s.V1HorizontalPodAutoscalerSpec(
                    scale_target_ref=k8s.V1CrossVersionObjectReference(kind="Deployment", name="web"),
                    max_replicas=1, min_replicas=2)))
        except k8s.ApiException as err:
            refused = (err.status, json.loads(err.body)["message"])
        return {"v1_annotations": read_v1.metadata.annotations, "v2_metrics": read_v2.spec.metrics,
                "v1_listed": [(i.metadata.name, i.spec.target_cpu_utilization_percentage) for i in listed.items],
                "refused": refused}


async def test_kubernetes_client_autoscaling_v2_and_v1_apis_see_one_object(real_app: App) -> None:
    async with serve(real_app) as url:
        seen = await asyncio.to_thread(_with_kubernetes_client, url)
    assert json.loads(seen["v1_annotations"]["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageUtilization": 70}}]
    memory, cpu = seen["v2_metrics"]
    assert (memory.resource.name, memory.resource.target.average_utilization) == ("memory", 70)
    assert (cpu.resource.name, cpu.resource.target.type, cpu.resource.target.average_utilization) == (
        "cpu", "Utilization", 55)
    assert seen["v1_listed"] == [("api", 55)]
    assert seen["refused"] == (422, 'HorizontalPodAutoscaler.autoscaling "bad" is invalid: spec.maxReplicas: '
                                     "Invalid value: 1: must be greater than or equal to `minReplicas`")


@needs_kubectl
async def test_kubectl_describe_shows_what_the_controller_did(real_app: App, tmp_path: Path) -> None:
    """The controller on its own fake clock, reaching the served app in-process; kubectl reads the result."""
    clock = FakeClock()
    async with kubectl_for(real_app, tmp_path) as kubectl:
        await kubectl("create", "deployment", "web", "--image=nginx", "--replicas=8")
        await kubectl("autoscale", "deployment", "web", "--min=2", "--max=5")
        api = Client.from_asgi(real_app, token="t", clock=clock)
        manager = Manager(api, clock=clock, rng=random.Random(1))
        hpas = HorizontalPodAutoscalerController(manager)
        manager.add_controller(hpas.controller)
        manager.add(hpas.events, needs_leader_election=False)
        running = asyncio.create_task(manager.run())
        try:
            await hpas.controller.synced.wait()
            for _ in range(20):
                await asyncio.sleep(0)
            await clock.advance(15)

            async def scaled() -> bool:
                deployment = await api.get(DEPLOYMENTS, "web", namespace="default")
                events = (await api.list(EVENTS, namespace="default"))["items"]
                return deployment["spec"]["replicas"] == 5 and any(e["reason"] == "SuccessfulRescale" for e in events)

            await eventually(scaled, tries=2000, interval=0.005)
            described = await kubectl("describe", "hpa", "web")
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await api.close()
    conditions = described.split("Conditions:")[1].splitlines()
    assert conditions[1].split() == ["Type", "Status", "Reason", "Message"]
    assert conditions[3].split(None, 3) == [
        "AbleToScale", "True", "SucceededRescale", "the HPA controller was able to update the target scale to 5"]
    assert "Deployment pods:                                       8 current / 5 desired" in described
    events = described.split("Events:")[1]
    assert "SuccessfulRescale" in events
    assert "New size: 5; reason: Current number of replicas above Spec.MaxReplicas" in events
