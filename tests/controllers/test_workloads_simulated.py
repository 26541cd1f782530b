"""Workloads on the simulated cluster: the scheduler and simulated kubelet drive the pods, nobody plays them.

The seed's scenarios in-process (FakeClock): a Deployment converges to Available; a scale from 5 to
10 shows its partial state truthfully; crash-looping pods are never counted ready or available (and
a budget over them allows no disruption); a StatefulSet's claims bind to provisioned volumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NS, PDBS, PODS, PVCS, PVS, World, condition, open_world
from .test_deployment import rollout_status

DEPLOYMENTS = builtin("apps", "deployments")
STATEFULSETS = builtin("apps", "statefulsets")
EVENTS = builtin("", "events")


def deployment(name: str, replicas: int, *, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": meta, "spec": {"containers": [{"name": "app", "image": "nginx"}]}},
                     **spec}}  # fmt: skip


async def pods_of(world: World, app: str) -> list[dict[str, Any]]:
    items = (await world.client.list(PODS, namespace=NS, label_selector=f"app={app}")).get("items") or []
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    return condition(pod, "Ready").get("status") == "True"


async def rolled_out(world: World, name: str, *, step: float = 0.0) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        d = await world.get(DEPLOYMENTS, name)
        return d if rollout_status(d)[0] else None

    result: dict[str, Any] = await world.eventually(check, step=step)
    return result


async def events_about(world: World, name: str) -> list[tuple[str, str, str]]:
    items = (await world.client.list(EVENTS, namespace=NS)).get("items") or []
    return [(e["source"]["component"], e["reason"], e["message"]) for e in items
            if e["involvedObject"].get("name") == name]  # fmt: skip


async def test_a_deployment_becomes_available_through_the_scheduler_and_kubelet(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), workloads=True) as world:
        await world.create(DEPLOYMENTS, deployment("web", 5))
        d = await rolled_out(world, "web")
        assert (d["status"]["readyReplicas"], d["status"]["availableReplicas"]) == (5, 5)
        assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"
        pods = await pods_of(world, "web")
        assert len(pods) == 5
        assert all(p["spec"].get("nodeName", "").startswith("kubeloop-node-") and p["status"]["phase"] == "Running"
                   and ready(p) for p in pods)  # fmt: skip
        rs_name = pods[0]["metadata"]["ownerReferences"][0]["name"]

        async def recorded() -> bool:
            by_d, by_rs = await events_about(world, "web"), await events_about(world, rs_name)
            return (("deployment-controller", "ScalingReplicaSet", f"Scaled up replica set {rs_name} from 0 to 5")
                    in by_d and sum(r == "SuccessfulCreate" for _, r, _ in by_rs) == 5)  # fmt: skip

        await world.eventually(recorded)
        assert await world.quiet_writes() == 0


async def test_scaling_from_5_to_10_shows_the_partial_state_truthfully(tmp_path: Path) -> None:
    options = SimulationOptions(nodes=2, readiness_delay=5.0)
    async with open_world(tmp_path, options, workloads=True) as world:
        await world.create(DEPLOYMENTS, deployment("web", 5))
        await rolled_out(world, "web", step=1.0)
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 10}}, namespace=NS)

        # The new pods exist and run, but are not ready for 5 more (fake) seconds: no time moves here.
        async def partial() -> dict[str, Any] | None:
            d = await world.get(DEPLOYMENTS, "web")
            status = d["status"]
            pods = await pods_of(world, "web")
            # Status never claims more than the world has (read before the pods; pods only improve).
            assert status.get("readyReplicas", 0) <= sum(ready(p) for p in pods)
            if status.get("observedGeneration") == d["metadata"]["generation"] and status.get("replicas") == 10:
                return d
            return None

        d = await world.eventually(partial)
        status = d["status"]
        assert d["spec"]["replicas"] == 10
        assert (status["replicas"], status["updatedReplicas"]) == (10, 10)
        assert (status["readyReplicas"], status["availableReplicas"], status["unavailableReplicas"]) == (5, 5, 5)
        # 25% of 10 may be unavailable (2): with 5 missing the Deployment is honestly not Available.
        assert condition(d, "Available")["status"] == "False"
        assert condition(d, "Available")["reason"] == "MinimumReplicasUnavailable"
        assert rollout_status(d) == (False, "5 of 10 updated replicas are available...")

        d = await rolled_out(world, "web", step=1.0)
        assert (d["status"]["readyReplicas"], d["status"]["availableReplicas"]) == (10, 10)
        assert "unavailableReplicas" not in d["status"]
        assert condition(d, "Available")["status"] == "True"


async def test_crash_looping_pods_are_never_ready_or_available(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True) as world:
        crash = {"kubeloop.dev/fault": "crash-loop"}
        await world.create(DEPLOYMENTS, deployment("web", 3, annotations=crash, progressDeadlineSeconds=120))
        await world.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
        seen: list[dict[str, Any]] = []

        async def timed_out() -> dict[str, Any] | None:
            d = await world.get(DEPLOYMENTS, "web")
            seen.append(d["status"])
            return d if condition(d, "Progressing").get("reason") == "ProgressDeadlineExceeded" else None

        d = await world.eventually(timed_out, step=5.0)
        # At no point did the status count a crash-looping pod as ready or available.
        assert all(not s.get("readyReplicas") and not s.get("availableReplicas") for s in seen)
        assert d["status"]["replicas"] == 3 and d["status"]["unavailableReplicas"] == 3
        assert condition(d, "Available")["status"] == "False"
        try:
            done = rollout_status(d)[0]
        except RuntimeError as exceeded:  # kubectl rollout status fails with this error
            assert "exceeded its progress deadline" in str(exceeded)
        else:
            raise AssertionError(f"rollout status reported {done} instead of the deadline error")
        pods = await pods_of(world, "web")
        assert len(pods) == 3 and not any(ready(p) for p in pods)
        for pod in pods:
            container = pod["status"]["containerStatuses"][0]
            assert container["restartCount"] >= 2
        assert any(p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"
                   for p in pods)  # fmt: skip
        budget = await world.get(PDBS, "web")
        assert (budget["status"]["currentHealthy"], budget["status"]["disruptionsAllowed"]) == (0, 0)
        assert condition(budget, "DisruptionAllowed")["reason"] == "InsufficientPods"


async def test_statefulset_claims_bind_to_provisioned_volumes_in_order(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), workloads=True) as world:
        claim = {"metadata": {"name": "data"},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
        await world.create(STATEFULSETS, {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "db", "image": "postgres"}]}},
                     "volumeClaimTemplates": [claim]},
        })  # fmt: skip

        async def all_ready() -> dict[str, Any] | None:
            sts = await world.get(STATEFULSETS, "db")
            return sts if (sts.get("status") or {}).get("readyReplicas") == 3 else None

        sts = await world.eventually(all_ready)
        assert sts["status"]["availableReplicas"] == 3
        for ordinal in range(3):
            pvc = await world.get(PVCS, f"data-db-{ordinal}")
            assert pvc["status"]["phase"] == "Bound"
            pv = await world.get(PVS, pvc["spec"]["volumeName"], None)
            assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["name"] == f"data-db-{ordinal}"
            pod = await world.get(PODS, f"db-{ordinal}")
            volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
            assert volumes["data"]["persistentVolumeClaim"]["claimName"] == f"data-db-{ordinal}"

        async def recorded() -> list[tuple[str, str, str]]:
            found = await events_about(world, "db")
            return found if len(found) >= 6 else []

        messages = {m for _, _, m in await world.eventually(recorded)}
        assert "create Pod db-0 in StatefulSet db successful" in messages
        assert "create Claim data-db-2 Pod db-2 in StatefulSet db success" in messages
