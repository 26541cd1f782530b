"""Disruption budgets: status from pods actually Ready, scale from the controllers, fail-safe, eviction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import NotFound, ResourceInfo, TooManyRequests
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import PDBS, PODS, World, condition, open_world, pod

REPLICASETS = builtin("apps", "replicasets")


def pdb(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


async def _status(world: World, check: Any, name: str = "web", *, step: float = 0.0) -> dict[str, Any]:
    seen: list[Any] = []

    async def probe() -> dict[str, Any] | None:
        obj = await world.get(PDBS, name)
        seen[:] = [obj.get("status")]
        return obj if check(obj.get("status") or {}) else None

    try:
        result: dict[str, Any] = await world.eventually(probe, step=step)
    except AssertionError as err:  # say what the budget last showed, not only that polling ran out
        raise AssertionError(f"PodDisruptionBudget {name}: status never matched; last seen {seen!r}") from err
    return result


async def _ready_pods(world: World, *names: str, **extra: Any) -> None:
    for name in names:
        await world.create(PODS, pod(name, **extra))

    async def all_ready() -> bool:
        pods = [await world.get(PODS, n) for n in names]
        return all(condition(p, "Ready").get("status") == "True" for p in pods)

    await world.eventually(all_ready)


async def test_status_counts_ready_pods_and_ignores_crash_looping_ones(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await _ready_pods(world, "web-1", "web-2", "web-3")
        await world.create(PODS, pod("web-4", annotations={"kubeloop.dev/fault": "crash-loop"}))
        await world.create(PDBS, pdb(minAvailable=2))
        budget = await _status(world, lambda s: s.get("expectedPods") == 4)
        status = budget["status"]
        assert (status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 2, 1)
        assert status["observedGeneration"] == budget["metadata"]["generation"]
        assert condition(budget, "DisruptionAllowed")["reason"] == "SufficientPods"
        await world.advance(600)  # many restarts later the crash-looping pod is still not healthy
        assert (await world.get(PDBS, "web"))["status"]["currentHealthy"] == 3
        assert await world.quiet_writes() == 0


async def test_percentages_and_max_unavailable_use_the_controllers_scale(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        rs = await world.create(REPLICASETS, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
                 "controller": True}
        for name in ("web-1", "web-2"):
            body = pod(name)
            body["metadata"]["ownerReferences"] = [owner]
            await world.create(PODS, body)
        await world.create(PDBS, pdb(maxUnavailable="25%"))
        status = (await _status(world, lambda s: s.get("currentHealthy") == 2))["status"]
        # 4 expected (the ReplicaSet's spec), 25% of 4 unavailable -> 3 must be healthy; only 2 are.
        assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (4, 3, 0)
        await world.client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, namespace="ns")
        status = (await _status(world, lambda s: s.get("expectedPods") == 2))["status"]
        assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (1, 1)


async def test_uncomputable_status_fails_safe(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await _ready_pods(world, "web-1", "web-2")
        await world.create(PDBS, pdb(minAvailable="50%"))  # a percentage needs the pods' controllers
        budget = await _status(world, lambda s: s.get("conditions"))
        assert budget["status"]["disruptionsAllowed"] == 0
        cond = condition(budget, "DisruptionAllowed")
        assert (cond["status"], cond["reason"]) == ("False", "SyncFailed")
        assert cond["message"] == 'found no controller ref for pod "web-1"'


async def test_eviction_respects_the_budget_and_the_controller_restores_it(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await _ready_pods(world, "web-1", "web-2", "web-3", terminationGracePeriodSeconds=5)
        await world.create(PDBS, pdb(minAvailable=2))
        await _status(world, lambda s: s.get("disruptionsAllowed") == 1)
        await world.client.create(PODS, {"apiVersion": "policy/v1", "kind": "Eviction",
                                         "metadata": {"name": "web-1"}}, namespace="ns", subresource="eviction")
        with pytest.raises(TooManyRequests) as refused:
            await world.client.create(PODS, {"apiVersion": "policy/v1", "kind": "Eviction",
                                             "metadata": {"name": "web-2"}}, namespace="ns", subresource="eviction")
        assert refused.value.causes[0]["reason"] == "DisruptionBudget"
        status = (await _status(world, lambda s: s.get("currentHealthy") == 2))["status"]
        assert status["disruptionsAllowed"] == 0
        await world.advance(5)  # web-1 goes away after its grace period; a replacement arrives
        await _ready_pods(world, "web-4")
        await _status(world, lambda s: s.get("disruptionsAllowed") == 1 and "disruptedPods" not in s)


CRDS = builtin("apiextensions.k8s.io", "customresourcedefinitions")


async def test_max_unavailable_uses_the_scale_subresource_of_a_custom_controller(tmp_path: Path) -> None:
    # getScaleController: pods owned by a custom resource count its /scale spec.replicas.
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.client.create(CRDS, {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "webapps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp", "listKind": "WebAppList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}},
                                   "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                              "statusReplicasPath": ".status.replicas"}}}]},
        })  # fmt: skip
        webapps = ResourceInfo("example.com", "v1", "WebApp", "webapps", "webapp", True)

        async def served() -> dict[str, Any]:
            try:
                return await world.client.create(webapps, {"apiVersion": "example.com/v1", "kind": "WebApp",
                                                           "metadata": {"name": "web"}, "spec": {"replicas": 5}},
                                                 namespace="ns")  # fmt: skip
            except NotFound:
                return {}

        app = await world.eventually(served)
        owner = {"apiVersion": "example.com/v1", "kind": "WebApp", "name": "web", "uid": app["metadata"]["uid"],
                 "controller": True}
        for name in ("web-1", "web-2", "web-3", "web-4"):
            body = pod(name)
            body["metadata"]["ownerReferences"] = [owner]
            await world.create(PODS, body)
        await world.create(PDBS, pdb(maxUnavailable=1))
        status = (await _status(world, lambda s: s.get("currentHealthy") == 4))["status"]
        # 5 expected from the custom resource's scale; 1 may be unavailable -> 4 desired; 4 healthy.
        assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (5, 4, 0)
        await world.client.patch(webapps, "web", {"spec": {"replicas": 4}}, namespace="ns")
        # Upstream watches no scale controllers: a budget sees the new scale on its next sync.
        await world.create(PDBS, pdb("web-2", maxUnavailable=1))
        status = (await _status(world, lambda s: s.get("expectedPods") == 4, "web-2"))["status"]
        assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (3, 1)
