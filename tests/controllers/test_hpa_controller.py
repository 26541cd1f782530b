"""The horizontal-pod-autoscaler controller on a fake clock, with no metrics API (kubeloop serves none):
min/max clamps, scaling disabled at zero replicas, a missing or unknown target, metrics that cannot be read,
conditions, Events and status, the 15-second resync.

Upstream: k/k ``pkg/controller/podautoscaler/horizontal.go`` (release 1.32): ``reconcileAutoscaler`` (the
FailedGetScale, ScalingDisabled, above-max and below-min branches, ``setStatus``, ``updateStatusIfNeeded``),
``computeReplicasForMetrics`` and ``computeStatusForResourceMetric`` (FailedGetResourceMetric,
FailedComputeMetricsReplicas), ``setConditionInList``; ``replica_calculator.go`` and
``metrics/client.go`` for the error texts of a missing resource metrics API.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubeloop.api import NotFound, ResourceInfo
from kubeloop.controllers import add_builtin_controllers
from kubeloop.controllers._hpa import HPAS
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._workload_kinds import DEPLOYMENTS, STATEFULSETS

from ._world import NS, ManagedWorld, managed_cluster

EVENTS = builtin("", "events")
CRDS = builtin("apiextensions.k8s.io", "customresourcedefinitions")
WEBAPPS = ResourceInfo("example.com", "v1", "WebApp", "webapps", "webapp", True)
NO_METRICS = ("failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from "
              "resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)")


@contextlib.asynccontextmanager
async def hpa_world(tmp_path: Path) -> AsyncIterator[ManagedWorld]:
    async with managed_cluster(tmp_path) as (cluster, ctl, manager):
        world = ManagedWorld(cluster=cluster, ctl=ctl, manager=manager)
        # As kube-controller-manager's --controllers names it, through the built-in registry.
        add_builtin_controllers(manager, names=["horizontal-pod-autoscaler"])
        async with world.started():
            await world.synced()
            yield world


def deployment(name: str = "web", replicas: int = 3) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def hpa(target: str = "web", *, kind: str = "Deployment", api_version: str = "apps/v1", name: str = "web",
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
                     "minReplicas": 2, "maxReplicas": 5, **spec}}


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in obj.get("status", {}).get("conditions", [])}


async def until_condition(world: ManagedWorld, kind: str, reason: str, name: str = "web") -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        current = await world.get(HPAS, name)
        assert conditions(current).get(kind, ("", "", ""))[1] == reason, current.get("status")
        return current

    found: dict[str, Any] = await world.eventually(check)
    return found


async def until_events(world: ManagedWorld, *reasons: str, name: str = "web") -> dict[str, list[str]]:
    async def check() -> dict[str, list[str]]:
        events = (await world.client.list(EVENTS, namespace=NS))["items"]
        mine = [e for e in events if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
                and e["involvedObject"]["name"] == name]
        by_reason: dict[str, list[str]] = {}
        for event in mine:
            by_reason.setdefault(event["reason"], []).append(event["message"])
        assert all(r in by_reason for r in reasons), by_reason
        return by_reason

    found: dict[str, list[str]] = await world.eventually(check)
    return found


async def replicas(world: ManagedWorld, resource: Any = DEPLOYMENTS, name: str = "web") -> int:
    return int((await world.get(resource, name, NS))["spec"]["replicas"])


async def test_a_target_above_max_replicas_is_scaled_down_to_the_maximum(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(DEPLOYMENTS, deployment(replicas=8))
        await world.create(HPAS, hpa())
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        current = await until_condition(world, "AbleToScale", "SucceededRescale")
        assert await replicas(world) == 5
        assert conditions(current)["AbleToScale"] == (
            "True", "SucceededRescale", "the HPA controller was able to update the target scale to 5")
        status = current["status"]
        assert (status["currentReplicas"], status["desiredReplicas"]) == (8, 5)
        assert status["lastScaleTime"] == current["status"]["conditions"][0]["lastTransitionTime"]
        assert "ScalingActive" not in conditions(current)  # the clamp computes no metric
        events = await until_events(world, "SuccessfulRescale")
        assert events["SuccessfulRescale"] == ["New size: 5; reason: Current number of replicas above Spec.MaxReplicas"]


async def test_a_target_below_min_replicas_is_scaled_up_to_the_minimum(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(STATEFULSETS, {**deployment(replicas=1), "apiVersion": "apps/v1", "kind": "StatefulSet"})
        await world.create(HPAS, hpa(kind="StatefulSet", minReplicas=3))
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        await until_condition(world, "AbleToScale", "SucceededRescale")
        assert await replicas(world, STATEFULSETS) == 3
        events = await until_events(world, "SuccessfulRescale")
        assert events["SuccessfulRescale"] == ["New size: 3; reason: Current number of replicas below Spec.MinReplicas"]


async def test_a_target_at_zero_replicas_disables_scaling(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(DEPLOYMENTS, deployment(replicas=0))
        await world.create(HPAS, hpa())
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        current = await until_condition(world, "ScalingActive", "ScalingDisabled")
        assert conditions(current) == {
            "AbleToScale": ("True", "SucceededGetScale", "the HPA controller was able to get the target's current scale"),
            "ScalingActive": ("False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero"),
        }
        assert current["status"].get("currentReplicas", 0) == 0 and current["status"]["desiredReplicas"] == 0
        await world.advance(16)
        assert await replicas(world) == 0


async def test_without_a_metrics_api_a_target_in_range_is_left_alone(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(DEPLOYMENTS, deployment(replicas=3))
        await world.create(HPAS, hpa())
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        current = await until_condition(world, "ScalingActive", "FailedGetResourceMetric")
        assert conditions(current)["ScalingActive"] == (
            "False", "FailedGetResourceMetric", f"the HPA was unable to compute the replica count: {NO_METRICS}")
        status = current["status"]
        assert (status["currentReplicas"], status["desiredReplicas"], status["currentMetrics"]) == (3, 0, [{"type": ""}])
        assert "lastScaleTime" not in status
        events = await until_events(world, "FailedGetResourceMetric", "FailedComputeMetricsReplicas")
        assert events["FailedGetResourceMetric"] == [NO_METRICS]
        assert events["FailedComputeMetricsReplicas"] == [
            f"invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {NO_METRICS}"]
        assert await replicas(world) == 3


async def test_a_missing_target_cannot_be_scaled(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(HPAS, hpa("nope"))
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        current = await until_condition(world, "AbleToScale", "FailedGetScale")
        assert conditions(current)["AbleToScale"] == (
            "False", "FailedGetScale",
            'the HPA controller was unable to get the target\'s current scale: deployments.apps "nope" not found')
        events = await until_events(world, "FailedGetScale")
        assert events["FailedGetScale"] == ['deployments.apps "nope" not found']


async def test_an_unknown_target_kind_has_no_mapping(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(HPAS, hpa(kind="Nope"))
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        current = await until_condition(world, "AbleToScale", "FailedGetScale")
        assert conditions(current)["AbleToScale"][2] == (
            'the HPA controller was unable to get the target\'s current scale: no matches for kind "Nope" in group "apps"')


async def test_the_resync_enforces_the_maximum_again_on_the_fake_clock(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        await world.create(DEPLOYMENTS, deployment(replicas=9))
        await world.create(HPAS, hpa())
        await world.settle()
        await world.advance(15)  # a new HPA is synced one period after it appears
        first = await until_condition(world, "AbleToScale", "SucceededRescale")
        await world.client.scale(DEPLOYMENTS, "web", 7, namespace=NS)
        await world.advance(5)
        assert await replicas(world) == 7  # the HPA is not watching its target: it waits for its resync
        await world.advance(10)

        async def clamped() -> bool:
            return await replicas(world) == 5

        await world.eventually(clamped)
        again = await until_events(world, "SuccessfulRescale")
        assert len(again["SuccessfulRescale"]) == 1  # the same Event, counted twice
        later = await world.get(HPAS, "web")
        assert later["status"]["lastScaleTime"] > first["status"]["lastScaleTime"]
        assert later["status"]["currentReplicas"] == 7


async def test_a_custom_resource_with_a_scale_subresource_is_found_through_discovery(tmp_path: Path) -> None:
    async with hpa_world(tmp_path) as world:
        # The controller read discovery before the CRD existed: a miss reads it again (as the RESTMapper resets).
        await world.create(HPAS, hpa("x", kind="Nope", name="warm-up"))
        await world.settle()
        await world.advance(15)
        await until_condition(world, "AbleToScale", "FailedGetScale", name="warm-up")
        await world.client.create(CRDS, {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "webapps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}},
                                   "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                              "statusReplicasPath": ".status.replicas"}}}]},
        })  # fmt: skip

        async def served() -> dict[str, Any]:
            try:
                return await world.client.create(WEBAPPS, {"apiVersion": "example.com/v1", "kind": "WebApp",
                                                           "metadata": {"name": "app"}, "spec": {"replicas": 9}},
                                                 namespace=NS)  # fmt: skip
            except NotFound:
                return {}

        await world.eventually(served)
        await world.create(HPAS, hpa("app", kind="WebApp", api_version="example.com/v1", name="app"))
        await world.settle()
        await world.advance(15)
        await until_condition(world, "AbleToScale", "SucceededRescale", name="app")
        assert await replicas(world, WEBAPPS, "app") == 5


async def test_custom_and_external_metrics_fail_as_without_their_apis(tmp_path: Path) -> None:
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
    external = {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                                                 "target": {"type": "Value", "value": "30"}}}
    async with hpa_world(tmp_path) as world:
        await world.create(DEPLOYMENTS, deployment(replicas=3))
        await world.create(HPAS, hpa(metrics=[pods, external]))
        await world.settle()
        await world.advance(15)
        current = await until_condition(world, "ScalingActive", "FailedGetPodsMetric")
        pods_error = ("unable to get metric rps: unable to fetch metrics from custom metrics API: "
                      "no custom metrics API (custom.metrics.k8s.io) registered")
        assert conditions(current)["ScalingActive"][2] == f"the HPA was unable to compute the replica count: {pods_error}"
        assert current["status"]["currentMetrics"] == [{"type": ""}, {"type": ""}]
        events = await until_events(world, "FailedGetPodsMetric", "FailedGetExternalMetric", "FailedComputeMetricsReplicas")
        assert events["FailedGetExternalMetric"] == [
            "unable to get external metric ns/queue/&LabelSelector{MatchLabels:map[string]string{q: jobs,},"
            "MatchExpressions:[]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API: "
            "the server could not find the requested resource (get queue.external.metrics.k8s.io)"]
        assert events["FailedComputeMetricsReplicas"] == [
            f"invalid metrics (2 invalid out of 2), first error is: failed to get pods metric value: {pods_error}"]
